"""serve's stdout: responses and pushes from many threads, one whole line at a time."""

from __future__ import annotations

import os
import threading
from typing import IO, Any, Optional

from ..storage.jsonio import dumps


def descriptor_of(stream: IO[bytes]) -> Optional[int]:
    """The stream's file descriptor, its buffer flushed, for write_through; None for one without
    (an in-memory stream in tests)."""
    try:
        fd = stream.fileno()
        stream.flush()
    except (AttributeError, OSError, ValueError):
        return None
    return fd


def write_through(stream: IO[bytes], fd: Optional[int], data: bytes) -> None:
    """data, whole, straight to the descriptor (one write syscall, no buffer layer: the path of
    each line `logs -f` prints), or through the stream where there is none."""
    if fd is None:
        stream.write(data)
        stream.flush()
        return
    view = memoryview(data)
    while view:  # a pipe may take part of a large chunk
        view = view[os.write(fd, view) :]


class LineWriter:
    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed = False
        self._fd = descriptor_of(stream)

    def send(self, obj: Any) -> bool:
        return self.send_raw(dumps(obj).encode("utf-8"))

    def send_raw(self, line: bytes) -> bool:
        """One already-encoded JSON object, without its newline."""
        data = line + b"\n"
        with self._lock:
            if self.closed:
                return False
            try:
                write_through(self._stream, self._fd, data)
            except (BrokenPipeError, OSError, ValueError):
                self.closed = True  # the client went away; the caller's loop ends on stdin EOF
                return False
        return True
