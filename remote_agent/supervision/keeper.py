"""`keeper AGENT_DIR`: one small process per agent dir that keeps the host's rules holding while
nobody looks. Every second it looks at the jobs whose supervisor lock is free and not ended, and
has each adopted (a new supervisor, which enforces the budget and idle stop again) or its end
journaled (adoption.adopt_if_lost), with no gpudeck command running anywhere.

Every supervisor makes sure a keeper runs (ensure_keeper, at its start and every KEEPER_CHECK
seconds): the keeper watches the supervisors and they watch the keeper, so neither one's SIGKILL
leaves a job unwatched. One keeper at a time holds `keeper.lock`; it leaves when no supervisor has
lived for IDLE_EXIT seconds (the next supervisor starts one again).

Standard library only (the agent's rule).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Dict, List, Set

from ..clock import monotonic
from ..jobstate import supervisor_alive
from ..storage.files import open_private
from ..storage.journal import tail_records
from ..storage.layout import JobFiles, iter_job_dirs
from .adoption import adopt_if_lost
from .launcher import self_command, spawn_detached
from .proctree import JOB_MARKER_VAR, SUPERVISOR_MARKER_VAR

LOCK_NAME = "keeper.lock"
LOG_NAME = "keeper.log"
SCAN_EVERY = 1.0  # seconds between looks: a lost job is adopted within about this
KEEPER_CHECK = 5.0  # seconds between a supervisor's checks that a keeper runs
IDLE_EXIT = 15.0  # seconds with no live supervisor and nothing adopted before the keeper leaves
TERMINAL = ("exited", "failed", "stopped", "killed")
RETRY_NOTHING = 10.0  # a job with nothing to do (e.g. a launch that never finished) is looked at again after


def keeper_running(root: Path) -> bool:
    """A keeper holds the lock (an unopenable lock counts as running: nothing could be done)."""
    try:
        return supervisor_alive(root / LOCK_NAME)
    except OSError:
        return True


def ensure_keeper(root: Path) -> None:
    """Start the agent dir's keeper unless one runs; never raises (a job runs without one)."""
    try:
        if keeper_running(root):
            return
        env = {k: v for k, v in os.environ.items() if k != JOB_MARKER_VAR}
        env[SUPERVISOR_MARKER_VAR] = "keeper"  # not a process of the job whose supervisor started it
        spawn_detached(self_command() + ["keeper", str(root)], root / LOG_NAME, "keeper", env)
    except OSError:
        return


def keep(root: Path) -> int:
    """The keeper's loop; 0 when another keeper runs or nothing was left to watch."""
    try:
        lock_fd = open_private(root / LOCK_NAME, os.O_RDWR | os.O_CREAT)
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0
    ended: Set[Path] = set()
    later: Dict[Path, float] = {}
    last_busy = monotonic()
    while root.is_dir():
        if look(root, ended, later):
            last_busy = monotonic()
        elif monotonic() - last_busy > IDLE_EXIT:
            break
        time.sleep(SCAN_EVERY)
    return 0


def look(root: Path, ended: Set[Path], later: Dict[Path, float]) -> bool:
    """One look at every job of the agent dir; True when a supervisor lives or one was started."""
    busy = False
    now = monotonic()
    try:
        dirs: List[Path] = [d for _, _, d in iter_job_dirs(root)]
    except OSError:
        return False
    for d in dirs:
        if d in ended or later.get(d, 0.0) > now:
            continue
        files = JobFiles(d)
        try:
            if supervisor_alive(files.lock):
                busy = True
                continue
        except OSError:
            continue
        if ended_by_tail(files.journal):
            ended.add(d)  # an end is for good: never read again
            continue
        outcome = adopt_if_lost(files, "the host's keeper")
        if outcome == "adopting":
            busy = True
        elif outcome == "ended":
            ended.add(d)
        else:
            later[d] = now + RETRY_NOTHING
    return busy


def ended_by_tail(journal: Path) -> bool:
    """The journal's end is among its last records (cheap: a host's many ended jobs are read once,
    by their tail); False also when that cannot be told (adopt_if_lost then reads it whole)."""
    states = [r for r in tail_records(journal) or [] if r.get("kind") == "state"]
    return bool(states) and states[-1].get("state") in TERMINAL
