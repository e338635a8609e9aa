"""A job's output.log as numbered lines, read in pieces: what the full log's virtual view needs.

Nothing is read whole. The agent's `lines` op gives a sparse index (a line number and byte offset
per 64 KiB block); showing line N reads from the mark at or before it, so a screenful costs about
one block whatever the file's size; `search` runs on the agent and answers a line number.
Every method blocks (a request to the agent): call them from thread workers only.
"""

from __future__ import annotations

import base64
import bisect
import re
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from .logtext import MAX_LINE, clean

READ = 256 << 10  # bytes per `logs` read while collecting lines
MAX_READ = 8 << 20  # a screenful of lines never reads more than this (a giant line is cut)
LINE_BYTES = MAX_LINE * 4  # bytes of one line kept for display (UTF-8: at most 4 per character)


class Requester(Protocol):
    """What this needs of a host: HostLink.request's shape."""

    def request(self, op: str, timeout: float = 30.0, **args: Any) -> Any: ...


@dataclass(frozen=True)
class Found:
    line: int  # its number, from 0
    offset: int  # its first byte
    next: int  # the next line's first byte


class LogFile:
    def __init__(self, link: Requester, job: str, node: str) -> None:
        self.link, self.job, self.node = link, job, node
        self._lock = threading.Lock()  # the index grows in one worker while another reads lines
        self._lines: list[int] = [0]  # marks: line numbers…
        self._offsets: list[int] = [0]  # …and where those lines start
        self.end = 0  # the byte after the last newline indexed
        self.complete_lines = 0  # lines before `end`
        self.size = 0
        self.done = False  # the job is over: the index is final once it reaches the size

    @property
    def total(self) -> int:
        """Lines to show: the complete ones, and a last one without its newline yet."""
        return self.complete_lines + (1 if self.size > self.end else 0)

    def refresh_index(self) -> bool:
        """Index what was written since the last call; True when there are more lines to show."""
        before = (self.total, self.size)
        while True:
            r = self.link.request(
                "lines", timeout=60.0, job=self.job, node=self.node, offset=self.end, line=self.complete_lines
            )
            with self._lock:
                for line, offset in r.get("marks") or ():
                    if offset > self._offsets[-1]:
                        self._lines.append(int(line))
                        self._offsets.append(int(offset))
                self.end, self.complete_lines = int(r["end"]), int(r["lines"])
                self.size, self.done = int(r["size"]), bool(r.get("done"))
            if not r.get("more"):
                return (self.total, self.size) != before

    def mark_before(self, line: int) -> tuple[int, int]:
        """The indexed (line, offset) at or before `line`: a known line start to read or search from."""
        with self._lock:
            i = bisect.bisect_right(self._lines, line) - 1
            return self._lines[i], self._offsets[i]

    def read_lines(self, first: int, count: int) -> list[tuple[int, str]]:
        """Lines first.. (at most count) as (byte offset, display text)."""
        line, pos = self.mark_before(first)
        out: list[tuple[int, str]] = []
        current = bytearray()
        start, budget = pos, MAX_READ
        while len(out) < count and budget > 0:
            at, data = self._read(pos)
            if not data:
                break
            pos, budget = at + len(data), budget - len(data)
            cut = 0
            while len(out) < count:
                nl = data.find(b"\n", cut)
                if nl < 0:
                    break
                if line >= first:
                    current += data[cut:nl][: max(0, LINE_BYTES - len(current))]
                    out.append((start, _text(current)))
                current = bytearray()
                line, cut, start = line + 1, nl + 1, at + nl + 1
            if line >= first and len(current) < LINE_BYTES:
                current += data[cut:][: LINE_BYTES - len(current)]
        if len(out) < count and line >= first and (current or pos > start):
            out.append((start, _text(current)))  # the last line, without its newline yet
        return out

    def read_tail(self, nbytes: int) -> tuple[int, list[tuple[int, str]]]:
        """The file's size and its last lines (within nbytes of the end) as (byte offset, text):
        shown while the index is being built, so the end is on screen at once whatever the size."""
        size = int(
            self.link.request("logs", timeout=30.0, job=self.job, node=self.node, offset=0, limit=1)["size"]
        )
        start = max(0, size - nbytes)
        at, data = self._read(start)
        data = data[: max(0, size - at)]
        if at > 0:  # mid-file: from the first whole line
            cut = data.find(b"\n") + 1
            if cut == 0:
                return size, []
            at, data = at + cut, data[cut:]
        rows, pos = [], 0
        for raw in data.split(b"\n"):
            rows.append((at + pos, _text(raw[:LINE_BYTES])))
            pos += len(raw) + 1
        if data.endswith(b"\n"):
            rows.pop()  # after the last newline: no line yet
        return size, rows

    def _read(self, offset: int) -> tuple[int, bytes]:
        """Bytes from offset on, skipping the output cap's hole (as the index does): (where, data)."""
        r = self.link.request("logs", timeout=30.0, job=self.job, node=self.node, offset=offset, limit=READ)
        data = base64.b64decode(r.get("data") or "")
        gap = r.get("gap")
        if not data and isinstance(gap, list) and len(gap) == 2 and gap[0] <= offset < gap[1]:
            return self._read(int(gap[1]))
        return offset, data

    def search(self, text: str, line: int, offset: int, backward: bool) -> Found | None:
        """The first line at or after (line, offset), a line start (backward: the last before it)
        holding text; None when there is none."""
        while True:
            r = self.link.request(
                "search",
                timeout=60.0,
                job=self.job,
                node=self.node,
                text=text,
                offset=offset,
                line=line,
                backward=backward,
            )
            found = r.get("found")
            if isinstance(found, dict):
                return Found(int(found["line"]), int(found["offset"]), int(found["next"]))
            if not r.get("more"):
                return None
            line, offset = int(r["line"]), int(r["offset"])

    def find(self, text: str, after: Found | tuple[int, int], backward: bool) -> Found | None:
        """The next match past `after` (a match, or a (line, offset) line start to search from),
        wrapping around the file once."""
        if isinstance(after, Found):
            line, offset = (after.line, after.offset) if backward else (after.line + 1, after.next)
        else:
            line, offset = after
        hit = self.search(text, line, offset, backward)
        if hit is None:  # wrap: from the other end
            hit = self.search(text, *((self.complete_lines, self.size) if backward else (0, 0)), backward)
        return hit


_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # a terminal would act on them: shown as one mark each


def _text(raw: bytes | bytearray) -> str:
    return _CONTROLS.sub("\ufffd", clean(bytes(raw).decode("utf-8", errors="replace")).expandtabs(4))
