"""Turns the job's output bytes into lines the log parser can read.

Progress bars redraw with `\r`, so both `\r` and `\n` end a line; ANSI colour and cursor codes
go; backspaces move the cursor as on a terminal (Keras' `verbose=1` bar moves back over its last
frame with `\b`s, then `\r`: the frame is read as it was shown).
"""

from __future__ import annotations

import re
from typing import List

ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
MAX_LINE_BYTES = 64 * 1024
_EOL = re.compile(rb"\r\n|\r|\n")


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text) if "\x1b" in text else text


def apply_backspaces(text: str) -> str:
    """What a terminal shows: `\b` moves the cursor back without erasing, the next character
    overwrites the one there (`ab\bc` shows `ac`; a frame followed by `\b`s still shows)."""
    if "\b" not in text:
        return text
    shown: List[str] = []
    cursor = 0
    for char in text:
        if char == "\b":
            cursor = max(0, cursor - 1)
            continue
        if cursor < len(shown):
            shown[cursor] = char
        else:
            shown.append(char)
        cursor += 1
    return "".join(shown)


def _clean(lines: List[str]) -> List[str]:
    return [apply_backspaces(strip_ansi(line)) for line in lines]


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
        return _clean(lines) if b"\x1b" in joined or b"\b" in joined else lines

    @property
    def pending(self) -> int:
        """Bytes fed but not yet returned as a line (the unfinished tail)."""
        return len(self._pending)

    def flush(self) -> List[str]:
        rest, self._pending = self._pending, b""
        return _clean([rest.decode("utf-8", "replace")]) if rest else []
