"""Bytes in any chunking → the agent's protocol lines, in order, as a pull reader would read them.

A transport that pushes (SSH: each packet's bytes on paramiko's transport thread) hands its bytes
here. A line's handler may say that raw bytes follow it (a `journal` push's body, `bytes` long):
those come whole to the body handler, then lines again. Each byte is copied about once however the
packets cut the stream, so a flood of small lines or one 100 MB body both stay linear.
"""

from __future__ import annotations

from collections.abc import Callable

LineHandler = Callable[[bytes], int]  # one line with its newline → body bytes that follow it (0: none)
BodyHandler = Callable[[bytes], None]


class LineStream:
    def __init__(self, on_line: LineHandler, on_body: BodyHandler) -> None:
        self._on_line = on_line
        self._on_body = on_body
        self._parts: list[bytes] = []  # an unfinished line, or the body bytes so far
        self._have = 0
        self._body_size = 0  # > 0 while a body is being collected

    def feed(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while pos < end:
            if self._body_size:
                take = min(self._body_size - self._have, end - pos)
                self._parts.append(data[pos : pos + take])
                self._have += take
                pos += take
                if self._have == self._body_size:
                    body = b"".join(self._parts)
                    self._reset()
                    self._on_body(body)
                continue
            nl = data.find(b"\n", pos)
            if nl < 0:
                self._parts.append(data[pos:])
                self._have += end - pos
                return
            line = data[pos : nl + 1]
            if self._parts:
                line = b"".join(self._parts) + line
                self._reset()
            pos = nl + 1
            self._body_size = max(0, self._on_line(line))

    @property
    def inside(self) -> bool:
        """An unfinished line or body is held: a stream that ends now was cut inside it."""
        return bool(self._parts) or self._body_size > 0

    def _reset(self) -> None:
        self._parts = []
        self._have = 0
        self._body_size = 0
