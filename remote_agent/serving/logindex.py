"""Line positions and text search over a job's output.log, for the client's virtual full log.

The client never reads a whole log to show a part of it: `lines` gives a sparse index (one mark
per `step` bytes: the line number and byte offset of the first line starting in that block), and
`search` finds a line holding a text and says its number and offset. Both scan in C-speed bytes
calls (count/find), bounded per answer by `max_bytes`: an answer with `more` says where to go on.

The output cap's hole (`gap`, [from, to): bytes dropped, read back as zeros) is skipped, as `logs`
skips it: its bytes belong to no line, so line numbers agree with what a reader of `logs` sees.
"""

from __future__ import annotations

import bisect
import io
import os
import threading
from collections import OrderedDict
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

CHUNK = 4 << 20  # bytes read per step of a scan
MAX_SCAN = 256 << 20  # at most this many bytes scanned per answer (the client asks again from `end`)
MIN_STEP = 4 << 10
MAX_TEXT = 256  # search text, in bytes
LONG_LINE = 16 << 20  # a search reads a longer line in pieces (a match in it may name a later start)


class LogArgError(ValueError):
    """A bad argument; the message says which, in one line."""


def _int_arg(value: Any, name: str, low: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise LogArgError("%s: expected an integer >= %d, got %r" % (name, low, value))
    return value


def _pieces(start: int, stop: int, gap: Optional[Sequence[int]]) -> List[Tuple[int, int]]:
    """[start, stop) as ranges without the gap's bytes."""
    if not gap or gap[1] <= start or gap[0] >= stop:
        return [(start, stop)]
    return [r for r in ((start, max(start, gap[0])), (min(stop, gap[1]), stop)) if r[1] > r[0]]


def _read(f: IO[bytes], start: int, stop: int) -> bytes:
    f.seek(start)
    return f.read(stop - start)


def index_lines(
    path: str, offset: Any, line: Any, step: Any, max_bytes: Any, gap: Optional[Sequence[int]]
) -> Dict[str, Any]:
    """From `offset` (a line start; `line` lines before it): marks [line, offset] for the first line
    starting in each `step`-byte block after it, up to the last newline scanned (`end`)."""
    offset = _int_arg(offset, "offset", 0, 0)
    line = _int_arg(line, "line", 0, 0)
    step = _int_arg(step, "step", MIN_STEP, 64 << 10)
    budget = min(_int_arg(max_bytes, "max_bytes", 1, MAX_SCAN), MAX_SCAN)
    try:
        with open(path, "rb") as f:
            return _scan_index(f, offset, line, step, budget, gap)
    except FileNotFoundError:  # no output yet
        return {"marks": [], "end": offset, "lines": line, "size": 0, "more": False, "step": step}


def index_file(
    f: IO[bytes], offset: Any, line: Any, step: Any, max_bytes: Any, gap: Optional[Sequence[int]]
) -> Dict[str, Any]:
    """index_lines over an open binary file (a recording's output, in memory)."""
    budget = min(_int_arg(max_bytes, "max_bytes", 1, MAX_SCAN), MAX_SCAN)
    return _scan_index(
        f,
        _int_arg(offset, "offset", 0, 0),
        _int_arg(line, "line", 0, 0),
        _int_arg(step, "step", MIN_STEP, 64 << 10),
        budget,
        gap,
    )


def _scan_index(
    f: IO[bytes], offset: int, line: int, step: int, budget: int, gap: Optional[Sequence[int]]
) -> Dict[str, Any]:
    marks: List[List[int]] = []
    end, lines = offset, line
    size = f.seek(0, io.SEEK_END)
    stop = min(size, offset + budget)
    next_mark = (offset // step + 1) * step  # the block whose first line start is marked next
    for a, b in _pieces(offset, stop, gap):
        pos = a
        while pos < b:
            data = _read(f, pos, min(b, pos + CHUNK))
            if not data:
                break
            at = 0
            while next_mark < pos + len(data):
                if at == 0 and next_mark <= pos == end:  # this chunk starts a line: it is the mark
                    marks.append([lines, pos])
                    next_mark = (pos // step + 1) * step
                    continue
                nl = data.find(b"\n", max(at, next_mark - pos - 1))
                if nl < 0:
                    break
                lines += data.count(b"\n", at, nl + 1)
                at = nl + 1
                marks.append([lines, pos + at])
                next_mark = ((pos + at) // step + 1) * step
            last = data.rfind(b"\n")
            if last >= 0:  # at <= last + 1: the newlines after the last mark, up to the last one
                lines += data.count(b"\n", at, last + 1)
                end = pos + last + 1
            pos += len(data)
    return {"marks": marks, "end": end, "lines": lines, "size": size, "more": stop < size, "step": step}


def search(
    path: str, text: Any, offset: Any, line: Any, backward: Any, max_bytes: Any, gap: Optional[Sequence[int]]
) -> Dict[str, Any]:
    """The first line at or after the line starting at `offset` (backward: the last line before it)
    holding `text`, ASCII case-insensitive: {"found": {"line", "offset", "next"} or null, and where a
    scan cut short by `max_bytes` goes on: "more", "offset", "line"}."""
    try:
        with open(path, "rb") as f:
            return search_file(f, text, offset, line, backward, max_bytes, gap)
    except FileNotFoundError:  # no output yet
        return search_file(io.BytesIO(), text, offset, line, backward, max_bytes, gap)


def search_file(
    f: IO[bytes],
    text: Any,
    offset: Any,
    line: Any,
    backward: Any,
    max_bytes: Any,
    gap: Optional[Sequence[int]],
) -> Dict[str, Any]:
    """search over an open binary file (a recording's output, in memory)."""
    if not isinstance(text, str) or not text or len(text.encode("utf-8")) > MAX_TEXT:
        raise LogArgError("text: expected 1..%d bytes of text, got %r" % (MAX_TEXT, text))
    if not isinstance(backward, bool):
        raise LogArgError("backward: expected true or false, got %r" % (backward,))
    offset = _int_arg(offset, "offset", 0, 0)
    line = _int_arg(line, "line", 0, 0)
    budget = min(_int_arg(max_bytes, "max_bytes", 1, MAX_SCAN), MAX_SCAN)
    needle = text.encode("utf-8").lower()
    size = f.seek(0, io.SEEK_END)
    if backward:
        return _search_back(f, needle, min(offset, size), line, budget, gap)
    return _search_forward(f, needle, offset, line, size, budget, gap)


def _found(f: IO[bytes], line: int, start: int, data: bytes, at: int, base: int) -> Dict[str, Any]:
    """The answer for a match whose line starts at data[at:] (file offset base + at)."""
    nl = data.find(b"\n", at)
    if nl >= 0:
        nxt = base + nl + 1
    else:  # the line goes on past this chunk: find its end in the file
        nxt = base + len(data)
        f.seek(nxt)
        while True:
            more = f.read(CHUNK)
            if not more:
                break
            cut = more.find(b"\n")
            if cut >= 0:
                nxt += cut + 1
                break
            nxt += len(more)
    return {
        "found": {"line": line, "offset": start, "next": nxt},
        "more": False,
        "offset": start,
        "line": line,
    }


def _search_forward(
    f: IO[bytes], needle: bytes, offset: int, line: int, size: int, budget: int, gap: Optional[Sequence[int]]
) -> Dict[str, Any]:
    pos, scanned, want = offset, 0, CHUNK
    while pos < size:
        if gap and gap[0] <= pos < gap[1]:
            pos = gap[1]
            continue
        stop = min(size, pos + want, gap[0] if gap and pos < gap[0] else size)
        data = _read(f, pos, stop)
        if not data:
            break
        cut = data.rfind(b"\n") + 1 if stop < size else len(data)
        if cut == 0 and want < LONG_LINE and stop == pos + want:
            want *= 2  # a line longer than the read: read more, to search it whole
            continue
        want = CHUNK
        cut = cut or len(data)
        window = data[:cut]
        hit = window.lower().find(needle)
        if hit >= 0:
            at = window.rfind(b"\n", 0, hit) + 1
            return _found(f, line + window.count(b"\n", 0, at), pos + at, data, at, pos)
        line += window.count(b"\n")
        pos += cut
        scanned += cut
        if scanned >= budget and pos < size:
            return {"found": None, "more": True, "offset": pos, "line": line}
    return {"found": None, "more": False, "offset": pos, "line": line}


def _search_back(
    f: IO[bytes], needle: bytes, offset: int, line: int, budget: int, gap: Optional[Sequence[int]]
) -> Dict[str, Any]:
    pos, scanned, want = offset, 0, CHUNK  # lines wholly before pos are searched
    while pos > 0:
        if gap and gap[0] < pos <= gap[1]:
            pos = gap[0]
            continue
        floor = gap[1] if gap and gap[1] < pos else 0
        low = max(0, pos - want, floor)
        data = _read(f, low, pos)
        if not data:
            break
        # From the first line start after low (the partial first line is the next read's); pos itself
        # is a line start, so the newline before it does not count.
        start = data.find(b"\n", 0, len(data) - 1) + 1 if low > floor else 0
        if start == 0 and low > floor and want < LONG_LINE:
            want *= 2  # a line longer than the read: read more, to search it whole
            continue
        want = CHUNK
        window = data[start:]
        hit = window.lower().rfind(needle)
        if hit >= 0:
            at = window.rfind(b"\n", 0, hit) + 1
            found_line = line - window.count(b"\n", at)
            return _found(f, found_line, low + start + at, window, at, low + start)
        line -= window.count(b"\n")
        pos = low + start
        scanned += len(window)
        if scanned >= budget and pos > 0:
            return {"found": None, "more": True, "offset": pos, "line": line}
    return {"found": None, "more": False, "offset": pos, "line": line}


MAX_MARKS = 65536  # marks per answer at most (a cached index of a huge file goes in several)
CACHED_FILES = 8


class _Known:
    """What earlier scans of one file found: its marks, and where they stopped."""

    def __init__(self, answer: Dict[str, Any]) -> None:
        self.lines = [0] + [m[0] for m in answer["marks"]]
        self.offsets = [0] + [m[1] for m in answer["marks"]]
        self.end, self.count = answer["end"], answer["lines"]

    def at(self, offset: int, line: int) -> Optional[int]:
        """The index of (line, offset) among the marks (the end counts as one past them), or None."""
        if (offset, line) == (self.end, self.count):
            return len(self.offsets)
        i = bisect.bisect_left(self.offsets, offset)
        return i if i < len(self.offsets) and (self.offsets[i], self.lines[i]) == (offset, line) else None

    def extend(self, answer: Dict[str, Any]) -> None:
        for line, offset in answer["marks"]:
            if offset > self.offsets[-1]:
                self.lines.append(line)
                self.offsets.append(offset)
        self.end, self.count = answer["end"], answer["lines"]


class IndexCache:
    """`lines` for one serve: output.log only grows (the cap's hole is part of the key), so what was
    scanned once is answered from memory and only the bytes written since are read; reopening the
    full log of a big file costs no second scan."""

    def __init__(self) -> None:
        self._known: OrderedDict[Tuple[str, int, Optional[Tuple[int, ...]]], _Known] = OrderedDict()
        self._lock = threading.Lock()

    def lines(
        self, path: str, offset: Any, line: Any, step: Any, max_bytes: Any, gap: Optional[Sequence[int]]
    ) -> Dict[str, Any]:
        offset = _int_arg(offset, "offset", 0, 0)
        line = _int_arg(line, "line", 0, 0)
        step = _int_arg(step, "step", MIN_STEP, 64 << 10)
        key = (path, step, tuple(gap) if gap else None)
        with self._lock:
            known = self._known.get(key)
            if known is not None:
                self._known.move_to_end(key)
        start = known.at(offset, line) if known is not None else None
        if known is None or start is None:
            answer = index_lines(path, offset, line, step, max_bytes, gap)
            if (offset, line) == (0, 0):
                with self._lock:
                    self._known[key] = _Known(answer)
                    while len(self._known) > CACHED_FILES:
                        self._known.popitem(last=False)
            return answer
        with self._lock:
            stop = min(len(known.offsets), start + 1 + MAX_MARKS)
            marks = [[known.lines[i], known.offsets[i]] for i in range(start + 1, stop)]
            if stop < len(known.offsets):  # more than one answer holds: go on from the last
                size = os.stat(path).st_size
                return {
                    "marks": marks,
                    "end": marks[-1][1],
                    "lines": marks[-1][0],
                    "size": size,
                    "more": True,
                    "step": step,
                }
            end, count = known.end, known.count
        answer = index_lines(path, end, count, step, max_bytes, gap)  # only what was written since
        with self._lock:
            known.extend(answer)
        return dict(answer, marks=marks + answer["marks"])
