"""Wait for files to grow: Linux inotify through ctypes (stdlib only), else a plain timed wait.

A line a job prints passes two followers (the supervisor reading output.log, serve reading the
journal). Polling each every 50 ms made ~50 ms of latency; inotify wakes them within a millisecond
while idle followers still cost nothing. Where inotify is missing, `wait` just sleeps its timeout,
so callers must keep polling on return either way (an event only says "look now").
"""

from __future__ import annotations

import ctypes
import os
import select
import threading
from typing import Dict, Optional, Union

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_ATTRIB = 0x00000004  # also fires when the file is deleted (link count drops)
_MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
_DRAIN_BYTES = 65536  # a pipe's whole buffer; thousands of inotify events

_libc: Union[ctypes.CDLL, bool, None] = None  # None: not tried yet; False: no inotify here
_libc_lock = threading.Lock()


def _load_libc() -> Optional[ctypes.CDLL]:
    """libc with inotify's calls typed, or None where there is no inotify."""
    global _libc
    with _libc_lock:
        if _libc is None:
            try:
                # dlopen(NULL): libc is already loaded; find_library would spawn ldconfig each start.
                lib = ctypes.CDLL(None, use_errno=True)
                lib.inotify_init1  # noqa: B018 - raises AttributeError where there is no inotify
                lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
                lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
                _libc = lib
            except (OSError, AttributeError):
                _libc = False
        return _libc if isinstance(_libc, ctypes.CDLL) else None


class Watcher:
    """One inotify instance watching any number of files, plus a pipe to wake a waiter early."""

    def __init__(self) -> None:
        self._fd = -1
        self._wds: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
            os.set_inheritable(fd, False)
        self._lib = _load_libc()
        if self._lib is not None:
            fd = self._lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            self._fd = fd if fd >= 0 else -1

    @property
    def native(self) -> bool:
        return self._fd >= 0

    def add(self, path: str) -> bool:
        """Watch path (it must exist); False where that is impossible (callers poll anyway)."""
        with self._lock:
            if self._fd < 0 or self._lib is None or path in self._wds:
                return path in self._wds
            wd = self._lib.inotify_add_watch(self._fd, os.fsencode(path), _MASK)
            if wd < 0:
                return False
            self._wds[path] = wd
            return True

    def remove(self, path: str) -> None:
        with self._lock:
            wd = self._wds.pop(path, None)
            if wd is not None and self._fd >= 0 and self._lib is not None and wd not in self._wds.values():
                self._lib.inotify_rm_watch(self._fd, wd)

    def wake(self) -> None:
        with self._lock:  # never write to a closed (and maybe reused) descriptor
            if self._wake_w < 0:
                return
            try:
                os.write(self._wake_w, b"x")
            except (BlockingIOError, OSError):
                pass  # the pipe is full: a wake-up is already pending

    def wait(self, timeout: Optional[float]) -> None:
        """Return when a watched file changed, wake() was called, or timeout seconds passed
        (None: no timeout, only a change or a wake ends the wait)."""
        fds = [fd for fd in (self._wake_r, self._fd) if fd >= 0]
        if not fds:
            return
        try:
            ready, _, _ = select.select(fds, [], [], timeout)
        except (OSError, ValueError):
            return
        for fd in ready:
            # One read each: it returns every queued inotify event (or wake byte) at once. A second
            # read only fails with EAGAIN, a syscall inside the push's CPU-bound burst; anything
            # left over just makes the next wait return at once ("look now" again).
            try:
                os.read(fd, _DRAIN_BYTES)
            except (BlockingIOError, OSError):
                pass

    def close(self) -> None:
        with self._lock:
            fds = (self._fd, self._wake_r, self._wake_w)
            self._fd = self._wake_r = self._wake_w = -1
        for fd in fds:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


def file_watcher(path: str) -> Optional[Watcher]:
    """A watcher on one file, or None when inotify cannot watch it."""
    watcher = Watcher()
    if watcher.add(path):
        return watcher
    watcher.close()
    return None
