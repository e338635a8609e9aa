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
keeperwatch.py.

Standard library only (the agent's rule).
"""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

from ..clock import monotonic
from ..jobstate import supervisor_alive
from ..storage.files import open_private
from ..storage.journal import tail_records
from ..storage.layout import JobFiles, iter_job_dirs
from .adoption import adopt_if_lost
from .jobschanged import note_change
from .launcher import self_command, spawn_detached
from .pidwatch import read_pid, runs, write_own_pid
from .proctree import JOB_MARKER_VAR, SUPERVISOR_MARKER_VAR
from .supervisorwatch import Watched

LOCK_NAME = "keeper.lock"
START_LOCK_NAME = "keeper.start"  # held by the one supervisor starting a keeper: no crowd of keepers
LOG_NAME = "keeper.log"
SCAN_EVERY = 1.0  # seconds between looks while a live supervisor is not watched by a pidfd
FULL_LOOK = 30.0  # seconds between looks while every live supervisor is watched (a safety net)
KEEPER_CHECK = 5.0  # seconds between a supervisor's checks that a keeper runs, without a pidfd of it
START_FD_VAR = "GPUDECK_KEEPER_START_FD"  # the start lock, handed on: held until keeper.lock is
IDLE_EXIT = 15.0  # seconds with no live supervisor and nothing adopted before the keeper leaves
TERMINAL = ("exited", "failed", "stopped", "killed")
RETRY_NOTHING = 10.0  # a job with nothing to do (e.g. a launch that never finished) is looked at again after


def keeper_running(root: Path) -> bool:
    """A keeper holds the lock (an unopenable lock counts as running: nothing could be done)."""
    try:
        return supervisor_alive(root / LOCK_NAME)
    except OSError:
        return True


def keeper_pid(root: Path) -> Optional[int]:
    """The running keeper's pid, from its lock (None: none runs, or an older keeper wrote none)."""
    if not keeper_running(root):
        return None
    pid = read_pid(root / LOCK_NAME)
    return pid if pid is not None and runs(pid, b"keeper") else None


def ensure_keeper(root: Path) -> bool:
    """Start the agent dir's keeper unless one runs; never raises (a job runs without one). False
    when another supervisor is starting one right now (ask again in a moment)."""
    try:
        if keeper_running(root):
            return True
        start_fd = open_private(root / START_LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except OSError:
        return True
    try:
        # A keeper killed wakes every supervisor at once: one starts the next, the others wait for it.
        fcntl.flock(start_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(start_fd)
        return False
    try:
        if keeper_running(root):
            return True
        env = {k: v for k, v in os.environ.items() if k != JOB_MARKER_VAR}
        env[SUPERVISOR_MARKER_VAR] = "keeper"  # not a process of the job whose supervisor started it
        # The keeper inherits the start lock (an flock is its open file's): others see a keeper
        # starting until it holds keeper.lock, and this supervisor need not wait for that.
        env[START_FD_VAR] = str(start_fd)
        argv = self_command() + ["keeper", str(root)]
        spawn_detached(argv, root / LOG_NAME, "keeper", env, pass_fds=(start_fd,))
        return True
    except OSError:
        return True
    finally:
        os.close(start_fd)


def wake_keeper(root: Path) -> None:
    """A new job's supervisor tells the keeper to look now (it waits on the supervisors it knows)."""
    pid = keeper_pid(root)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGUSR1)
        except OSError:
            pass


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
