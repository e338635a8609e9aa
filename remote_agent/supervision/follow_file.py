"""`tail -F` into a job's output.log: copies a log file some other program writes, surviving
rotation (rename + new file) and truncation (copytruncate).

The copy is append-only, so output.log stays one byte stream with growing offsets even when the
watched file restarts from zero: the supervisor's reader parses each copied byte exactly once,
and `logs`/`follow` serve it like any job's output.

- The file may not exist yet: it is opened as soon as it appears.
- Rotation: when the path names another file (inode changed), the old one is read to its end,
  then the new one from its start.
- Truncation: the file got shorter than what was read, or (truncated and already regrown while we
  slept) the bytes just before our offset are no longer the ones we copied: read from the start.
- A line cut by a switch gets a newline, so two files' lines never merge into one.
Bytes written to a rotated file after the new file appeared are not read (as with `tail -F`).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from typing import Optional, Tuple

from ..storage.watch import Watcher

CHUNK = 1 << 16
POLL = 0.25  # inotify wakes us at once; this only bounds the wait where it cannot
CHECK_BYTES = 64  # bytes before our offset compared to spot a file rewritten in place
DISK_RETRY = 1.0


class FileFollower:
    def __init__(self, path: str, out_fd: int, from_end: bool = False) -> None:
        self.path = path
        self.out_fd = out_fd
        self.from_end = from_end
        self.copied = 0  # bytes appended to output.log
        self.switches = 0  # rotations and truncations seen
        self._fd: Optional[int] = None
        self._ident: Optional[Tuple[int, int]] = None
        self._pos = 0
        self._recent = b""  # the last CHECK_BYTES copied from the current file
        self._last_byte = b"\n"
        self._idle = False  # we reached the end since the last check
        self._stop = threading.Event()
        self._watch = Watcher()
        self._first_open = True
        # The directory, not the file: a new file at the path (rotation) is seen there too.
        self._watch.add(os.path.dirname(path) or ".")

    def stop(self) -> None:
        """Ends run() after one last read of everything written so far."""
        self._stop.set()
        self._watch.wake()

    def run(self) -> None:
        try:
            while not self._stop.is_set():
                if not self._step_or_reopen():
                    if self._fd is None:
                        self._watch.add(os.path.dirname(self.path) or ".")  # the dir may appear late
                    self._watch.wait(POLL)
            for _ in range(1 << 20):  # the final drain: bounded, however the file keeps changing
                if not self._step_or_reopen():
                    break
        finally:
            if self._fd is not None:
                os.close(self._fd)
            self._watch.close()

    def _step_or_reopen(self) -> bool:
        """A read error (the file's disk went away, EIO) must not end the watch: open it again later."""
        try:
            return self.step()
        except OSError:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            return False

    def step(self) -> bool:
        """Copy what is there now; True when something happened (bytes, or a switch of file)."""
        if self._fd is None:
            return self._open()
        if self._idle and self._rewritten():
            self._restart()
            return True
        data = os.pread(self._fd, CHUNK, self._pos)
        if data:
            self._idle = False
            self._write(data)
            self._pos += len(data)
            self._recent = (self._recent + data)[-CHECK_BYTES:]
            return True
        self._idle = True
        try:
            size = os.fstat(self._fd).st_size
        except OSError:
            size = self._pos
        if size < self._pos:
            self._restart()
            return True
        if self._identity() not in (None, self._ident):
            os.close(self._fd)  # read to its end above: the rotated file has nothing more for us
            self._fd, self._ident = None, None
            self._mark_switch()
            return self._open()
        return False

    # -- helpers ----------------------------------------------------------------------------------

    def _identity(self) -> Optional[Tuple[int, int]]:
        try:
            st = os.stat(self.path)
        except OSError:
            return None  # renamed away and not yet recreated: keep reading the old file
        return (st.st_dev, st.st_ino)

    def _open(self) -> bool:
        try:
            # O_NONBLOCK: a FIFO put at the path must not block us (regular files ignore the flag).
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return False  # not there yet (or not readable yet): wait for it
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return False
        ident = (st.st_dev, st.st_ino)
        if ident == self._ident and st.st_size >= self._pos:
            pass  # the same file again, after a read error: go on from where we were
        else:
            self._pos = st.st_size if (self.from_end and self._first_open) else 0
            self._recent = b""
        self._fd, self._ident, self._idle = fd, ident, False
        self._first_open = False
        return True

    def _rewritten(self) -> bool:
        """Truncated and regrown past our offset while we slept: the bytes before it changed."""
        assert self._fd is not None
        if not self._recent:
            return False
        try:
            size = os.fstat(self._fd).st_size
            if size <= self._pos:
                return False
            before = os.pread(self._fd, len(self._recent), self._pos - len(self._recent))
        except OSError:
            return False
        return before != self._recent

    def _restart(self) -> None:
        self._pos, self._recent, self._idle = 0, b"", False
        self._mark_switch()

    def _mark_switch(self) -> None:
        self.switches += 1
        if self._last_byte not in (b"\n", b"\r"):
            self._write(b"\n")

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.out_fd, view)
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EINTR):
                    raise
                if self._stop.is_set() and exc.errno != errno.EINTR:
                    return  # ending with the disk full: what is left is not copied
                time.sleep(DISK_RETRY)
                continue
            view = view[n:]
            self.copied += n
        self._last_byte = data[-1:]
