"""One followed output (`follow` pushes) for a view: every byte once, in order, across reconnects.

The stream keeps the offset of the next byte it is owed. Pushes come on a client's reader thread;
after a reconnect the link follows again from that offset, and a chunk that overlaps what was
taken is cut, one that starts past it (a stale subscription's) dropped, as `ReconnectingClient`
does for `gpudeck logs -f`. Decoded lines wait here, bounded, until the app thread takes them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ..exactly_once import owed_output
from .logtext import LogDecoder

KEEP_LINES = 5000  # lines waiting for the app thread at most (a view shows the last ones anyway)


class OutputStream:
    def __init__(self, job: str, node: str, tail_bytes: int, wake: Callable[[], object]) -> None:
        self.job, self.node = job, node
        self.tail_bytes = tail_bytes  # the first follow starts this far before the end
        self._wake = wake  # says lines are waiting (from the reader thread): must not block
        self._lock = threading.Lock()
        self.owed: int | None = None  # the next byte owed; None until the first follow
        self.skipped = 0  # bytes before where the view starts
        self._cut_first = False  # starting mid-file: drop the partial first line
        self._decoder = LogDecoder()
        self._lines: deque[str] = deque(maxlen=KEEP_LINES)
        self._woken = False
        self.end: dict[str, Any] | None = None  # the `output_end` push, once everything was sent
        self.error: str | None = None  # why the stream cannot go on (e.g. the job was removed)

    def start_at(self, size: int) -> int:
        """Where to follow from: the next byte owed, or (first time) tail_bytes before `size`."""
        with self._lock:
            if self.owed is None:
                self.owed = self.skipped = max(0, size - self.tail_bytes)
                self._cut_first = self.owed > 0
            return self.owed

    @property
    def started(self) -> bool:
        return self.owed is not None

    def take_push(self, obj: dict[str, Any]) -> None:
        """An `output` or `output_end` push (reader thread)."""
        offset = obj.get("offset")
        if not isinstance(offset, int) or isinstance(offset, bool):
            return
        with self._lock:
            owed = self.owed
            if owed is None or self.end is not None:
                return
            if obj.get("push") == "output_end":
                if offset == owed:  # else a stale subscription's end: bytes are still owed
                    self.end = obj
                    self.error = obj.get("error") if isinstance(obj.get("error"), str) else None
                    tail = self._decoder.pending()
                    if tail:
                        self._lines.append(tail)
                    self._signal()
                return
            taken = owed_output(obj, offset, owed)
            if taken is None:
                return
            data, self.owed = taken
            if self._cut_first:
                cut = data.find(b"\n")
                if cut < 0:
                    return
                data, self._cut_first = data[cut + 1 :], False
            self._lines.extend(self._decoder.feed(data))
            self._signal()

    def fail(self, reason: str) -> None:
        """The link could not follow again (the agent's answer): the stream is over."""
        with self._lock:
            self.error = reason
            self.end = {"push": "output_end", "error": reason}
            self._signal()

    def _signal(self) -> None:
        if not self._woken:
            self._woken = True
            self._wake()

    def take(self) -> list[str]:
        """The lines waiting (app thread)."""
        with self._lock:
            lines = list(self._lines)
            self._lines.clear()
            self._woken = False
            return lines
