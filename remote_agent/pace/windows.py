"""Rates over windows of a node's own points (points.py), newest window first. Window j covers
(now - (j+1)·W, now - j·W] on the node's host clock (`now` is the host's time when it answered),
so clocks of different hosts never meet in one subtraction.

The step at a time is interpolated between the kept points (flat after the last one: a node that
stopped has rate 0); a window that starts before the node's first point has no rate (None): a
node that just started, or whose history is shorter, is not measured there."""

from __future__ import annotations

from bisect import bisect_right
from typing import List, Optional, Sequence

Point = Sequence[float]


def step_at(points: Sequence[Point], t: float, times: Optional[List[float]] = None) -> Optional[float]:
    """The step the node had reached at `t` (interpolated), or None before its first point;
    `times`: the points' times, when the caller asks many times."""
    if not points or t < points[0][0]:
        return None
    if t >= points[-1][0]:
        return float(points[-1][1])
    i = bisect_right(times if times is not None else [p[0] for p in points], t) - 1
    (t0, s0), (t1, s1) = points[i][:2], points[i + 1][:2]
    return float(s0) if t1 <= t0 else s0 + (s1 - s0) * (t - t0) / (t1 - t0)


def step_rates(points: Sequence[Point], now: float, window: float, count: int) -> List[Optional[float]]:
    """Steps per second in each of `count` windows back from `now`, newest first."""
    rates: List[Optional[float]] = []
    times = [p[0] for p in points]
    for j in range(count):
        end, start = now - j * window, now - (j + 1) * window
        a, b = step_at(points, start, times), step_at(points, end, times)
        rates.append(None if a is None or b is None else max(0.0, (b - a) / window))
    return rates


def util_means(points: Sequence[Point], now: float, window: float, count: int) -> List[Optional[float]]:
    """The mean GPU utilisation of the samples in each window, newest first; a window without a
    sample reads the last sample before it (a reading holds until the next); None before the first."""
    means: List[Optional[float]] = []
    for j in range(count):
        end, start = now - j * window, now - (j + 1) * window
        inside = [float(p[1]) for p in points if start < p[0] <= end]
        before = [float(p[1]) for p in points if p[0] <= start]
        if inside:
            means.append(sum(inside) / len(inside))
        else:
            means.append(before[-1] if before else None)
    return means
