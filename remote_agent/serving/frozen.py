"""A frozen supervisor (SIGSTOP) is taken over like a dead one: its node would lag silently.

Told apart from a busy or steady one by two facts together: the process is stopped (state `T`),
and its journal has been silent for several heartbeat intervals (the journal's mtime: a steady
job's thinned heartbeats never make a running supervisor look frozen, as it is not stopped).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Optional

from ..jobstate import JobView, supervisor_alive
from ..supervision.adoption import note_lost_why
from ..supervision.proctree import is_live, process_state

SILENT_HEARTBEATS = 3  # intervals without a record, while stopped, before it is taken over
MIN_SILENCE = 1.0  # seconds, whatever the interval


def frozen_supervisor(view: JobView) -> Optional[int]:
    """The pid of this job's supervisor when it is stopped and its journal silent long enough."""
    pid = view.fields.get("supervisor_pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0 or process_state(pid) != "T":
        return None
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if str(view.files.dir).encode() not in f.read().split(b"\0"):
                return None  # a reused pid: not this job's supervisor
        silent = time.time() - os.stat(str(view.files.journal)).st_mtime
    except OSError:
        return None
    spec = view.spec or {}
    interval = spec.get("heartbeat_interval", 10.0)
    interval = (
        float(interval) if isinstance(interval, (int, float)) and not isinstance(interval, bool) else 10.0
    )
    return pid if silent >= max(MIN_SILENCE, SILENT_HEARTBEATS * interval) else None


def end_frozen_supervisor(view: JobView) -> Optional[str]:
    """SIGKILLs a frozen supervisor (the job is then lost: the caller adopts it); says why, or None."""
    pid = frozen_supervisor(view)
    if pid is None:
        return None
    why = "its supervisor (pid %d) was frozen" % pid
    note_lost_why(view.files, "a job listing; " + why)  # the keeper may adopt it first (adoption.py)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while (is_live(pid) or supervisor_alive(view.files.lock)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return why
