"""Turns the job's output bytes into lines the log parser can read.

Progress bars redraw with `\r`, so both `\r` and `\n` end a line; ANSI colour codes go.
"""

from __future__ import annotations

import re
from typing import List

ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
MAX_LINE_BYTES = 64 * 1024


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text) if "\x1b" in text else text


class LineSplitter:
    """Feeds chunks of bytes, returns complete decoded lines; keeps the unfinished tail."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> List[str]:
        data = self._pending + chunk
        parts = re.split(rb"\r\n|\r|\n", data)
        self._pending = parts.pop()
        if len(self._pending) > MAX_LINE_BYTES:
            # A newline-free flood must not grow without bound: cut it into a line.
            parts.append(self._pending)
            self._pending = b""
        return [strip_ansi(p.decode("utf-8", "replace")) for p in parts if p]

    @property
    def pending(self) -> int:
        """Bytes fed but not yet returned as a line (the unfinished tail)."""
        return len(self._pending)

    def flush(self) -> List[str]:
        rest, self._pending = self._pending, b""
        return [strip_ansi(rest.decode("utf-8", "replace"))] if rest else []
