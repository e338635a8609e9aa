"""serve --sessions' stdout (serving/sessions.py): one frame at a time from many sessions' threads,
each session's lines framed as `D <sid> <len>`, paused and closed one session at a time."""

from __future__ import annotations

import threading
from typing import IO, Any, Optional

from ..storage.jsonio import dumps
from .output import LineWriter, descriptor_of, write_through

START = b"S gpudeck-sessions"  # the first line: the master skips a login shell's chatter up to it


class Mux:
    """serve's stdout, shared by the sessions: one whole frame at a time."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._fd = descriptor_of(stream)
        self._lock = threading.Lock()
        self.broken = False

    def write(self, data: bytes, writer: Optional[SessionWriter] = None) -> bool:
        """One frame, whole; none for a session already closed (checked under the same lock, so
        once close() returns nothing more of that session goes out)."""
        with self._lock:
            if self.broken or (writer is not None and writer.closed):
                return False
            try:
                write_through(self._stream, self._fd, data)
            except (BrokenPipeError, OSError, ValueError):
                self.broken = True
                return False
        return True

    def close(self, writer: SessionWriter) -> None:
        with self._lock:
            writer.closed = True
        writer.flowing.set()  # a paused writer wakes, and writes nothing


class SessionWriter(LineWriter):
    """A LineWriter whose lines reach one session's client, framed by the mux."""

    def __init__(self, mux: Mux, sid: int) -> None:  # no super().__init__: nothing to write to directly
        self.mux = mux
        self._head = b"D %d " % sid
        self.closed = False
        self.flowing = threading.Event()
        self.flowing.set()

    def send_raw(self, line: bytes) -> bool:
        self.flowing.wait()  # paused (P): this session's writer waits, as on a full pipe; no other
        return self._frame(line)

    def offer(self, obj: Any) -> None:
        """obj unless the session is paused (a heartbeat: the beating thread never waits)."""
        if self.flowing.is_set():
            self._frame(dumps(obj).encode("utf-8"))

    def _frame(self, line: bytes) -> bool:
        return self.mux.write(self._head + b"%d\n" % (len(line) + 1) + line + b"\n", self)
