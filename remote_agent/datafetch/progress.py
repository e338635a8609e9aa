"""The fetch's progress as the job's first output: objects, bytes and rate, at most once a second."""

from __future__ import annotations

import sys
import threading
import time
from typing import Optional


def megabytes(n: float) -> str:
    return "%.1f MB" % (n / 1e6)


class Progress:
    EVERY = 1.0

    def __init__(self, label: str, objects: int, size: int) -> None:
        self.label, self.objects, self.size = label, objects, size
        self.done_objects = 0
        self.done_bytes = 0
        self.start = time.monotonic()
        self._last: Optional[float] = None
        self._lock = threading.Lock()

    def add_bytes(self, n: int) -> None:
        with self._lock:
            self.done_bytes += n

    def add_object(self) -> None:
        with self._lock:
            self.done_objects += 1

    def tick(self) -> None:
        """A line when a second has passed since the last one (called by the waiting thread)."""
        now = time.monotonic()
        if self._last is not None and now - self._last < self.EVERY:
            return
        self._last = now
        rate = self.done_bytes / max(now - self.start, 1e-6)
        say(
            "gpudeck: data %s: %d/%d objects, %s/%s, %s/s"
            % (
                self.label,
                self.done_objects,
                self.objects,
                megabytes(self.done_bytes),
                megabytes(self.size),
                megabytes(rate),
            )
        )


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
