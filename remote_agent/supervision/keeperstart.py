"""Finding and starting the agent dir's keeper (keeper.py): what every supervisor does at its start
and when the keeper ends. Apart from keeper.py, whose loop imports adoption and the job state, so
that a supervisor does not hold those for its job's life (issue 33). Standard library only."""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path
from typing import Optional

from ..storage.files import open_private
from .joblock import supervisor_alive
from .launcher import self_command, spawn_detached
from .pidwatch import read_pid, runs
from .proctree import JOB_MARKER_VAR, SUPERVISOR_MARKER_VAR

LOCK_NAME = "keeper.lock"
START_LOCK_NAME = "keeper.start"  # held by the one supervisor starting a keeper: no crowd of keepers
LOG_NAME = "keeper.log"
KEEPER_CHECK = 5.0  # seconds between a supervisor's checks that a keeper runs, without a pidfd of it
START_FD_VAR = "GPUDECK_KEEPER_START_FD"  # the start lock, handed on: held until keeper.lock is


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
