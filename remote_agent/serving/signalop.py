"""The `signal` op: SIGTERM, SIGINT or SIGKILL to one process of a job's live tree on this node (the
process view's `x`/`i`/`X`). The pid must belong to the job right now: a pid the client saw a moment
ago may have ended and been reused by anything else; the supervisor is refused (a job is ended with
stop/kill, which the supervisor records)."""

from __future__ import annotations

import os
import signal
from typing import Any, Dict

from .procview import ProcsError, job_pids

SIGNALS = {"TERM": signal.SIGTERM, "INT": signal.SIGINT, "KILL": signal.SIGKILL}


def send_signal(req: Dict[str, Any], jobs: Any) -> Dict[str, Any]:
    pid = req.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        raise ProcsError("pid: expected a process id > 1, got %r" % (pid,))
    name = req.get("signal")
    if name not in SIGNALS:
        raise ProcsError("signal: expected one of %s, got %r" % (", ".join(SIGNALS), name))
    roles = job_pids(jobs.view(req.get("job"), req.get("node")))
    if pid not in roles:
        raise ProcsError("pid %d: not a live process of job %s on this node" % (pid, req.get("job")))
    if roles[pid] == "supervisor":
        raise ProcsError("pid %d is the job's supervisor: stop or kill the job instead" % pid)
    try:
        os.kill(pid, SIGNALS[name])
    except ProcessLookupError:
        raise ProcsError("pid %d: ended before the signal" % pid) from None
    except PermissionError:
        raise ProcsError("pid %d: not permitted to signal it" % pid) from None
    return {"pid": pid, "signal": name, "role": roles[pid]}
