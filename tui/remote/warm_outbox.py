"""One session's bytes on their way from the shared serve to its command (warm_serve.py).

The master reads one channel for every session, so it must never wait on one command: a `logs -f`
piped into a paused `less` would hold up every other command on the host, the TUI's included. Each
session's frames queue here and its own thread writes them to its unix socket. Past HIGH queued bytes
the session is paused at serve (`P N`: only that session's writers wait there, as a plain serve's
would on a full pipe), and resumed (`R N`) once the queue is under LOW again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import deque
from collections.abc import Callable

from . import warm_frames as frames

HIGH = 4 << 20
LOW = 1 << 20


class Outbox:
    def __init__(self, client: socket.socket, sid: int, control: Callable[[bytes], None]) -> None:
        self.client = client
        self.sid = sid
        self._control = control  # a frame to serve (P/R)
        self._queue: deque[tuple[bytes, bytes]] = deque()
        self._size = 0
        self._cond = threading.Condition()
        self._paused = False
        self._closed = False  # nothing more is sent (the command went away)
        self._last = False  # after what is queued: hang up (serve went away)
        threading.Thread(target=self._run, name=f"outbox-{sid}", daemon=True).start()

    def put(self, kind: bytes, data: bytes) -> None:
        with self._cond:
            if self._closed:
                return
            for i in range(0, max(len(data), 1), frames.CHUNK):
                self._queue.append((kind, data[i : i + frames.CHUNK]))
            self._size += len(data)
            self._cond.notify()
            pause = self._size > HIGH and not self._paused
            self._paused = self._paused or pause
        if pause:
            self._tell(b"P %d\n" % self.sid)

    def finish(self) -> None:
        """Hang up once what is queued is sent."""
        with self._cond:
            self._last = True
            self._cond.notify()

    def close(self) -> None:
        """Drop what is queued: the command went away."""
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify()

    def _tell(self, frame: bytes) -> None:
        with contextlib.suppress(OSError, EOFError):
            self._control(frame)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed or self._last)
                if self._closed or not self._queue:
                    break
                kind, data = self._queue.popleft()
                self._size -= len(data)
                resume = self._paused and self._size < LOW
                self._paused = self._paused and not resume
            if resume:
                self._tell(b"R %d\n" % self.sid)
            try:
                frames.send(self.client, kind, data)
            except OSError:  # the command went away; its own handler closes the session
                self.close()
        with contextlib.suppress(OSError):
            self.client.shutdown(socket.SHUT_RDWR)
