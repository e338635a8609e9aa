"""`keeper AGENT_DIR`: one small process per agent dir that keeps the host's rules holding while
nobody looks. It looks at the jobs whose supervisor lock is free and not ended, and has each adopted
(a new supervisor, which enforces the budget and idle stop again) or its end journaled
(adoption.adopt_if_lost), with no gpudeck command running anywhere.

The keeper watches the supervisors and they watch the keeper, so neither one's SIGKILL leaves a job
unwatched. Neither polls the other while both live (issue 33: 200 idle jobs cost nothing): each
holds a pidfd of the other (pidwatch.py), readable the moment that process ends. The keeper looks
again when a supervisor it watches ends, when a starting supervisor wakes it (SIGUSR1: a new job),
and every FULL_LOOK seconds as a safety net; where it has no pidfd of a live supervisor (Python 3.8,
an older agent's supervisor, no descriptors left) it looks every SCAN_EVERY seconds, as before.
One keeper at a time holds `keeper.lock` (its pid written in it); it leaves when no supervisor has
lived for IDLE_EXIT seconds (the next supervisor starts one again). The supervisor's side is
keeperwatch.py, and keeperstart.py finds and starts a keeper.

Standard library only (the agent's rule).
"""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

from ..clock import monotonic
from ..storage.files import open_private
from ..storage.journal import tail_records
from ..storage.layout import JobFiles, iter_job_dirs
from .adoption import adopt_if_lost
from .joblock import supervisor_alive
from .jobschanged import note_change
from .keeperstart import LOCK_NAME as LOCK_NAME
from .keeperstart import START_FD_VAR
from .pidwatch import write_own_pid
from .supervisorwatch import Watched

SCAN_EVERY = 1.0  # seconds between looks while a live supervisor is not watched by a pidfd
FULL_LOOK = 30.0  # seconds between looks while every live supervisor is watched (a safety net)
IDLE_EXIT = 15.0  # seconds with no live supervisor and nothing adopted before the keeper leaves
TERMINAL = ("exited", "failed", "stopped", "killed")
RETRY_NOTHING = 10.0  # a job with nothing to do (e.g. a launch that never finished) is looked at again after


def _let_go_of_start_lock() -> None:
    """The start lock its supervisor handed on: another keeper may be started from here on."""
    value = os.environ.pop(START_FD_VAR, "")
    if value.isdigit():
        try:
            os.close(int(value))
        except OSError:
            pass


def _woken(signum: int, frame: Any) -> None:
    """SIGUSR1's handler: none is needed, but only a handled signal writes to the wakeup fd."""


def keep(root: Path) -> int:
    """The keeper's loop; 0 when another keeper runs or nothing was left to watch."""
    try:
        lock_fd = open_private(root / LOCK_NAME, os.O_RDWR | os.O_CREAT)
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0
    finally:
        _let_go_of_start_lock()
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.signal(signal.SIGUSR1, _woken)  # before its pid is written: no signaller kills it
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    write_own_pid(lock_fd)
    ended: Set[Path] = set()
    later: Dict[Path, float] = {}
    watched = Watched()
    last_busy = monotonic()
    while root.is_dir():
        if look(root, ended, later, watched):
            last_busy = monotonic()
        elif monotonic() - last_busy > IDLE_EXIT:
            break
        now = monotonic()
        due = [t - now for t in later.values() if t > now]
        watched.wait(wake_r, min([FULL_LOOK if watched.all() else SCAN_EVERY] + due))
    return 0


def look(root: Path, ended: Set[Path], later: Dict[Path, float], watched: Optional[Watched] = None) -> bool:
    """One look at every job of the agent dir; True when a supervisor lives or one was started.
    A job whose supervisor is `watched` is not touched: its pidfd says when it ends."""
    busy = False
    now = monotonic()
    watched = Watched() if watched is None else watched
    watched.unwatched = 0
    try:
        dirs: List[Path] = [d for _, _, d in iter_job_dirs(root)]
    except OSError:
        return False
    for d in dirs:
        if d in watched.fds:
            busy = True
            continue
        if d in ended or later.get(d, 0.0) > now:
            continue
        files = JobFiles(d)
        try:
            if supervisor_alive(files.lock):
                busy = True
                watched.add(d, files.lock)
                continue
        except OSError:
            continue
        if ended_by_tail(files.journal):
            ended.add(d)  # an end is for good: never read again
            continue
        outcome = adopt_if_lost(files, "the host's keeper")
        if outcome == "adopting":
            busy = True
            watched.unwatched += 1  # its adopter is yet to take the lock: look again soon
        elif outcome == "ended":
            ended.add(d)
            note_change(root)  # a lost job's end: a budgeted neighbour counts its share again
        else:
            later[d] = now + RETRY_NOTHING
    return busy


def ended_by_tail(journal: Path) -> bool:
    """The journal's end is among its last records (cheap: a host's many ended jobs are read once,
    by their tail); False also when that cannot be told (adopt_if_lost then reads it whole)."""
    states = [r for r in tail_records(journal) or [] if r.get("kind") == "state"]
    return bool(states) and states[-1].get("state") in TERMINAL
