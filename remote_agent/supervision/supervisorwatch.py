"""The keeper's side of watching the supervisors (keeper.py): a pidfd of each live supervisor, so
the keeper sleeps until one ends instead of opening every job's lock every second (issue 33).
Standard library only (the agent's rule)."""

from __future__ import annotations

import os
import select
from pathlib import Path
from typing import Dict

from .joblock import supervisor_alive
from .pidwatch import close_quietly, open_pidfd, read_pid, runs


class Watched:
    """Job dir -> a pidfd of its live supervisor; and how many live ones the last look could not watch."""

    def __init__(self) -> None:
        self.fds: Dict[Path, int] = {}
        self.unwatched = 0

    def all(self) -> bool:
        """Every live supervisor the last look found is watched (and there is one)."""
        return bool(self.fds) and self.unwatched == 0

    def add(self, job_dir: Path, lock: Path) -> None:
        """Watch the supervisor holding `lock`, by the pid it wrote there; counted unwatched when it
        cannot be (no pidfds here, an older agent's supervisor, no descriptor left)."""
        pid = read_pid(lock)
        fd = open_pidfd(pid) if pid is not None and runs(pid, os.fsencode(str(job_dir))) else None
        try:
            # Still held after the pidfd was opened: the pid read was the holder's, not a predecessor's.
            held = fd is not None and supervisor_alive(lock)
        except OSError:
            held = False
        if fd is None or not held:
            close_quietly(fd)
            self.unwatched += 1
            return
        self.fds[job_dir] = fd

    def wait(self, wake_r: int, timeout: float) -> None:
        """Until a watched supervisor ends (it is dropped: the next look sees why), a wake-up byte
        on `wake_r` (a signal: a new job), or timeout seconds."""
        poller = select.poll()  # not select(): hundreds of pidfds may exceed FD_SETSIZE's numbers
        poller.register(wake_r, select.POLLIN)
        by_fd = {fd: d for d, fd in self.fds.items()}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        try:
            ready = poller.poll(max(0.0, timeout) * 1000.0)
        except OSError:
            return
        for fd, _ in ready:
            if fd == wake_r:
                try:
                    os.read(wake_r, 4096)
                except OSError:
                    pass
            elif fd in by_fd:
                self.fds.pop(by_fd[fd], None)
                close_quietly(fd)
