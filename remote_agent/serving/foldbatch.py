"""Metric points gathered in journal order as columns, for the series fold to take in one go.

The fold (seriesfold.py) envelopes each batch before it keeps it, so it wants many points at a
time, and as columns: a dense `points` line arrives as columns already (storage/pointcolumns.py),
plain metric records as dicts. A batch keeps, per metric name, the chunks it was given with where
each starts, so a name that shows up in a few points costs nothing for the points without it (no
padding): its x values are the same slices of the batch's step and time columns.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

NOT_SERIES = frozenset(
    {"step", "total_steps", "rank"}
)  # rank: which worker printed a point (metrics/ranks.py)


class MetricBatch:
    def __init__(self) -> None:
        self.n = 0
        self.ts: List[
            Any
        ] = []  # each point's time: a float, or the journal's text of it (float() reads both)
        self.steps: List[Any] = []  # each point's `step` as written (None: stepless)
        self.chunks: Dict[str, List[Tuple[int, List[Any]]]] = {}  # name -> (first point's index, values)
        self.first_step: Dict[str, Any] = {}  # name -> the step written with its first point (its axis)

    def add_values(self, ts: List[Any], values: List[Dict[str, Any]]) -> None:
        """Plain metric points: one dict of values each, a time each."""
        start = self.n
        for key in set().union(*values) - NOT_SERIES:
            if key not in self.first_step:
                self.first_step[key] = next(v for v in values if key in v).get("step")
            self.chunks.setdefault(key, []).append((start, [v.get(key) for v in values]))
        self.steps.extend([v.get("step") for v in values])
        self.ts.extend(ts)
        self.n += len(values)

    def add_columns(self, t: float, rows: int, columns: Dict[str, List[Any]]) -> None:
        """A dense line's points: every name has a value in every row, all at one time."""
        start = self.n
        steps = columns.get("step")
        for key, column in columns.items():
            if key in NOT_SERIES:
                continue
            if key not in self.first_step:
                self.first_step[key] = steps[0] if steps is not None else None
            self.chunks.setdefault(key, []).append((start, column))
        self.steps.extend(steps if steps is not None else [None] * rows)
        self.ts.extend([t] * rows)
        self.n += rows

    def column(self, key: str, xs: List[Any]) -> Tuple[List[Any], List[Any]]:
        """(x, y) columns of one name: its values and, beside each, xs at that point."""
        chunks = self.chunks[key]
        if len(chunks) == 1:
            start, ys = chunks[0]
            return (xs if start == 0 and len(ys) == self.n else xs[start : start + len(ys)]), ys
        out_x: List[Any] = []
        out_y: List[Any] = []
        for start, ys in chunks:
            out_x.extend(xs[start : start + len(ys)])
            out_y.extend(ys)
        return out_x, out_y
