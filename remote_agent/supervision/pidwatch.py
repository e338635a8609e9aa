"""Waiting on another process's end without polling it: a pidfd (Linux 5.3+, Python 3.9+) becomes
readable when its process ends, so a supervisor and the host's keeper watch each other from a blocked
select instead of looking every few seconds (issue 33). Where there is none, callers poll as before.

Each watched process names itself in a file it holds an flock on (a job's `lock`, `keeper.lock`):
`write_own_pid` after taking the lock, `read_pid` by the watcher. Standard library only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def write_own_pid(lock_fd: int) -> None:
    """Names the lock's holder in it (never raises: a job runs without being watched this way)."""
    try:
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, b"%d\n" % os.getpid(), 0)
    except OSError:
        pass


def read_pid(lock: Path) -> Optional[int]:
    """The pid the lock's holder wrote; None when it wrote none (an older agent's) or it is unreadable."""
    try:
        with open(str(lock), "rb") as f:
            text = f.read(32).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def open_pidfd(pid: Optional[int]) -> Optional[int]:
    """A pidfd of `pid` (close-on-exec), or None where pidfds are missing or the process is gone."""
    opener = getattr(os, "pidfd_open", None)
    if pid is None or opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def runs(pid: int, word: bytes) -> bool:
    """Whether `pid`'s command line holds `word` (a reused pid is not the process meant)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return word in f.read().split(b"\0")
    except OSError:
        return False


def close_quietly(fd: Optional[int]) -> None:
    if fd is not None and fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
