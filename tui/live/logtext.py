"""Turns raw output bytes (read by byte offset) into display lines.

Chunks may end mid-line or mid-UTF-8 sequence: the incomplete tail is held back until the next
chunk. A carriage return redraws a line (progress bars), so only the text after the last one shows.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MAX_LINE = 4000  # a single huge line must not make the log widget crawl


def clean(line: str) -> str:
    line = _ANSI.sub("", line)
    if "\r" in line:
        parts = [p for p in line.split("\r") if p]
        line = parts[-1] if parts else ""
    return line[:MAX_LINE]


class LogDecoder:
    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> list[str]:
        """Complete lines in data (plus what was held back), without their newlines."""
        buf = self._rest + data
        cut = buf.rfind(b"\n")
        if cut < 0:
            self._rest = buf[-(1 << 20) :]  # a line without end: keep at most 1 MiB of it
            return []
        self._rest = buf[cut + 1 :]
        text = buf[:cut].decode("utf-8", errors="replace")
        return [clean(line) for line in text.split("\n")]

    def pending(self) -> str:
        """The incomplete last line, for a job that ended without a final newline."""
        return clean(self._rest.decode("utf-8", errors="replace"))
