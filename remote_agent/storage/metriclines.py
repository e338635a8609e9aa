"""Journal lines for a burst of metric points: runs of same-named points become `points` lines.

A flood of metric lines is what makes journals big: one record per point repeated the envelope and
the names for every number. Consecutive plain metric points of one burst that have the same names
(in the same order) are written as one `points` line (records.py says what it means); a lone point,
or one whose names differ from its neighbours', stays a plain `metric` record. A run whose line
would pass the record bound is halved until it fits; a single point that does not goes through
bounded_line, which cuts it as it cuts any record.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from .jsonio import dumps
from .records import points_line

MAX_ROWS = 1000  # points per line: a resume re-encodes at most one such line
Entry = Tuple[str, Dict[str, Any]]


def point_runs(batch: List[Entry]) -> Dict[int, int]:
    """start -> end (exclusive) index of each run of two or more consecutive plain metric entries
    with the same names, at most MAX_ROWS long."""
    runs: Dict[int, int] = {}
    start, names = 0, None
    for index, (kind, fields) in enumerate(batch + [("", {})]):
        values = fields.get("values") if kind == "metric" and len(fields) == 1 else None
        here = tuple(values) if isinstance(values, dict) and values else None
        if here is not None and here == names and index - start < MAX_ROWS:
            continue
        if names is not None and index - start >= 2:
            runs[start] = index
        start, names = index, here
    return runs


def run_lines(first_seq: int, t_text: str, points: List[Dict[str, Any]], limit: int,
              single: Callable[[int, Dict[str, Any]], str]) -> List[str]:  # fmt: skip
    """The lines of a run of same-named points starting at first_seq; `single` writes a lone point."""
    if len(points) == 1:
        return [single(first_seq, points[0])]
    line = points_line(first_seq, t_text, list(points[0]), [list(p.values()) for p in points], dumps)
    if len(line) <= limit // 4 or len(line.encode("utf-8")) <= limit:
        return [line]
    half = len(points) // 2
    return (run_lines(first_seq, t_text, points[:half], limit, single)
            + run_lines(first_seq + half, t_text, points[half:], limit, single))  # fmt: skip
