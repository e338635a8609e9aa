"""One session's bytes on their way from the shared serve to its command (warm_serve.py).

The master reads one channel for every session, so it must never wait on one command: a `logs -f`
piped into a paused `less` would hold up every other command on the host, the TUI's included. Each
session's frames queue here and its own thread writes them to its unix socket. Past HIGH queued bytes
the session is paused at serve (`P N`: only that session's writers wait there, as a plain serve's
would on a full pipe), and resumed (`R N`) once the queue is under LOW again.

A frame that finds the queue empty and its thread idle goes out at once from the serve's reader, by
a send that never waits (issue 33: the handoff to the thread was a wake on `logs -f`'s every line);
whatever the socket does not take then is queued as above.
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
        self._queue: deque[bytes] = deque()  # whole frames, or what a send at once left of one
        self._size = 0
        self._sending = False  # its thread is sending what it took from the queue
        self._cond = threading.Condition()
        self._paused = False
        self._closed = False  # nothing more is sent (the command went away)
        self._last = False  # after what is queued: hang up (serve went away)
        threading.Thread(target=self._run, name=f"outbox-{sid}", daemon=True).start()

    def put(self, kind: bytes, data: bytes) -> None:
        with self._cond:
            if self._closed:
                return
            wire = [
                frames.HEADER.pack(kind, len(part)) + part
                for part in (data[i : i + frames.CHUNK] for i in range(0, max(len(data), 1), frames.CHUNK))
            ]
            if not self._queue and not self._sending and not self._last:
                wire[0] = self._send_now(wire[0])
                if self._closed:
                    return
            for frame in wire:
                if frame:
                    self._queue.append(frame)
                    self._size += len(frame)
            self._cond.notify()
            pause = self._size > HIGH and not self._paused
            self._paused = self._paused or pause
        if pause:
            self._tell(b"P %d\n" % self.sid)

    def _send_now(self, frame: bytes) -> bytes:
        """What of frame the socket did not take at once (called holding the lock, the queue empty)."""
        try:
            return frame[self.client.send(frame, socket.MSG_DONTWAIT) :]
        except BlockingIOError:
            return frame
        except OSError:  # the command went away; its own handler closes the session
            self._closed = True
            self._cond.notify()  # its thread ends
            return b""

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
                frame = self._queue.popleft()
                self._size -= len(frame)
                resume = self._paused and self._size < LOW
                self._paused = self._paused and not resume
                self._sending = True
            if resume:
                self._tell(b"R %d\n" % self.sid)
            try:
                self.client.sendall(frame)
            except OSError:  # the command went away; its own handler closes the session
                self.close()
            with self._cond:
                self._sending = False
        with contextlib.suppress(OSError):
            self.client.shutdown(socket.SHUT_RDWR)
