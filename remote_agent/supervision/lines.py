"""Turns the job's output bytes into lines the log parser can read.

Progress bars redraw with `\r`, so both `\r` and `\n` end a line; ANSI colour codes go.
"""

from __future__ import annotations

import re
from typing import List

ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
MAX_LINE_BYTES = 64 * 1024
_EOL = re.compile(rb"\r\n|\r|\n")


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text) if "\x1b" in text else text


class LineSplitter:
    """Feeds chunks of bytes, returns complete decoded lines; keeps the unfinished tail."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> List[str]:
        data = self._pending + chunk if self._pending else chunk
        parts = _EOL.split(data) if b"\r" in data else data.split(b"\n")
        self._pending = parts.pop()
        if len(self._pending) > MAX_LINE_BYTES:
            # A newline-free flood must not grow without bound: cut it into a line.
            parts.append(self._pending)
            self._pending = b""
        if b"" in parts:
            parts = [p for p in parts if p]
        if not parts:
            return []
        # One decode for the whole chunk: "\n" never occurs inside a UTF-8 sequence, and a broken
        # sequence before it is replaced the same way as at the end of its own line.
        joined = b"\n".join(parts)
        lines = joined.decode("utf-8", "replace").split("\n")
        return [strip_ansi(line) for line in lines] if b"\x1b" in joined else lines

    @property
    def pending(self) -> int:
        """Bytes fed but not yet returned as a line (the unfinished tail)."""
        return len(self._pending)

    def flush(self) -> List[str]:
        rest, self._pending = self._pending, b""
        return [strip_ansi(rest.decode("utf-8", "replace"))] if rest else []
