"""serve's stdout: responses and pushes from many threads, one whole line at a time."""

from __future__ import annotations

import os
import threading
from typing import IO, Any, Optional

from ..storage.jsonio import dumps


class LineWriter:
    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed = False
        try:  # a real descriptor (serve's stdout): one write syscall a line, no buffer layer
            self._fd: Optional[int] = stream.fileno()
            stream.flush()
        except (AttributeError, OSError, ValueError):
            self._fd = None

    def send(self, obj: Any) -> bool:
        return self.send_raw(dumps(obj).encode("utf-8"))

    def send_raw(self, line: bytes) -> bool:
        """One already-encoded JSON object, without its newline."""
        data = line + b"\n"
        with self._lock:
            if self.closed:
                return False
            try:
                if self._fd is None:
                    self._stream.write(data)
                    self._stream.flush()
                else:
                    view = memoryview(data)
                    while view:  # a pipe may take part of a long line
                        view = view[os.write(self._fd, view):]
            except (BrokenPipeError, OSError, ValueError):
                self.closed = True  # the client went away; the caller's loop ends on stdin EOF
                return False
        return True
