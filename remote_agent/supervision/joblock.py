"""Taking a job node's lock as its supervisor, and telling whether a supervisor holds one
(supervisor_alive). Others hold it only for a look (the keeper or a listing ending a lost job,
`record_lost_end`): a supervisor starting in that instant waits them out instead of leaving as
"already supervised" (which failed the launch: "the supervisor died at start"). A lock still held
after PATIENCE is a real supervisor's. The holder writes its pid into the lock file (pidwatch.py).
Standard library only."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from .pidwatch import write_own_pid

PATIENCE = 2.0  # seconds: far above a look (a journal's tail read), far below a launch's wait


def take(lock_fd: int, patience: float = PATIENCE) -> bool:
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            write_own_pid(lock_fd)  # the keeper waits on its end through a pidfd (keeper.py)
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def supervisor_alive(lock_path: Path) -> bool:
    """The supervisor holds an exclusive flock for its whole life; if we can share it, it is gone."""
    try:
        fd = os.open(str(lock_path), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
