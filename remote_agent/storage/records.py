"""Journal records as readers see them: the one place that knows the dense `points` record.

A flood of metric lines journaled one record per point cost ~91 bytes per point for a 26-byte
printed line, mostly the envelope (`seq`, `t`, `kind`, `values`, the names) repeated per point.
The writer therefore writes a run of consecutive metric points with the same names (one burst of
output, one clock reading) as ONE line, still one JSON object:

    {"seq":101,"last":103,"t":T,"kind":"points","names":["step","loss"],"rows":[[1,0.5],[2,0.25],[3,0.125]]}

meaning the metric records seq 101..103, each `{"seq":101+i,"t":T,"kind":"metric","values":
dict(zip(names, rows[i]))}`. A line needs nothing from any other line (no declared columns to
remember), so a reader may start at any line: resume, adoption and slicing stay line-local.
`last` sits right after `seq` so a reader learns a line's seq range from its prefix, unparsed.

Every reader turns records into what they mean through `expand` (decoded records) or `seq_range`
/ `lines_after_seq` (journal text); a journal of only old-style `metric` lines reads as before.
The series fold, which must take in a million points in well under a second, reads the writer's
exact form of a `points` line as columns (pointcolumns.py) and hands any other form to `expand`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

POINTS = "points"
_RANGE = re.compile(rb'^\{"seq":(\d+),(?:"last":(\d+),)?')


def expand(record: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The records a decoded journal record stands for: a `points` record's metric records, one per
    row; any other record itself. A malformed `points` record stands for nothing (readers skip it)."""
    if record.get("kind") != POINTS:
        return [record]
    seq, names, rows, t = record.get("seq"), record.get("names"), record.get("rows"), record.get("t")
    if not (isinstance(seq, int) and isinstance(names, list) and isinstance(rows, list)):
        return []
    if record.get("last") != seq + len(rows) - 1:
        return []
    width = len(names)
    if not all(isinstance(name, str) for name in names):
        return []
    if not all(isinstance(row, list) and len(row) == width for row in rows):
        return []
    return [{"seq": seq + offset, "t": t, "kind": "metric", "values": dict(zip(names, row))}  # noqa: B905 (checked; 3.8)
            for offset, row in enumerate(rows)]  # fmt: skip


def expand_all(records: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """`expand` over a batch, in order. A batch without a `points` record comes back as a list of itself."""
    out: List[Dict[str, Any]] = []
    for record in records:
        if record.get("kind") == POINTS:
            out.extend(expand(record))
        else:
            out.append(record)
    return out


def seq_range(line: bytes) -> Optional[Tuple[int, int]]:
    """(first, last) seq of a journal line from its prefix (the writer puts them first); the JSON
    is parsed only for a line written otherwise. None: not a record."""
    match = _RANGE.match(line)
    if match:
        first = int(match.group(1))
        return first, int(match.group(2)) if match.group(2) else first
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("seq"), int):
        return None
    last = record.get("last") if record.get("kind") == POINTS else None
    return record["seq"], last if isinstance(last, int) else record["seq"]


def last_seq_of(line: bytes) -> Optional[int]:
    found = seq_range(line)
    return found[1] if found else None


def lines_after_seq(lines: List[bytes], seq: int) -> List[bytes]:
    """The journal lines holding records with seq above `seq`; a `points` line that straddles it
    is cut to its rows above `seq` (re-encoded: the only line of a resume that is)."""
    out = []
    for line in lines:
        found = seq_range(line)
        if found is None or found[1] <= seq:
            continue
        out.append(line if found[0] > seq else _points_after(line, seq))
    return [line for line in out if line]


def _points_after(line: bytes, seq: int) -> bytes:
    try:
        record = json.loads(line)
    except ValueError:
        return b""
    if not isinstance(record, dict) or not expand(record):
        return b""
    keep = record["rows"][seq + 1 - record["seq"] :]
    record.update(seq=seq + 1, rows=keep)
    return points_line(record["seq"], json.dumps(record["t"]), record["names"], keep, _compact).encode(
        "utf-8"
    )


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def points_line(seq: int, t_text: str, names: List[str], rows: List[List[Any]], dumps: Any) -> str:
    """The line of a `points` record (seq..seq+len(rows)-1), its fields in the order readers rely on."""
    return '{"seq":%d,"last":%d,"t":%s,"kind":"points","names":%s,"rows":%s}' % (
        seq, seq + len(rows) - 1, t_text, dumps(names), dumps(rows))  # fmt: skip
