"""The loss chart's transforms, pure functions: EMA smoothing (as TensorBoard's slider: debiased, so
the first points are not pulled towards zero) and the x axis in steps or in seconds since the start,
mapped through the job's step → time record (linear between recorded steps)."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence

EMA_WEIGHT = 0.8  # how much of the past each smoothed point keeps

Points = list[tuple[float, float]]


def ema(points: Points, weight: float = EMA_WEIGHT) -> Points:
    """Debiased exponential moving average; a non-finite y is skipped, not spread."""
    out: Points = []
    acc, norm = 0.0, 0.0
    for x, y in points:
        if not math.isfinite(y):
            continue
        acc = weight * acc + (1 - weight) * y
        norm = weight * norm + (1 - weight)
        out.append((x, acc / norm))
    return out


def _interp(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    """y at x on the polyline (xs ascending), held flat beyond both ends."""
    i = bisect_left(xs, x)
    if i <= 0:
        return ys[0]
    if i >= len(xs):
        return ys[-1]
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _monotone(pairs: Points) -> Points:
    """The pairs whose both coordinates rise over the last kept one (a step count or clock going back: dropped)."""
    kept: Points = []
    for a, b in pairs:  # in the order given (a Series: by step)
        if not kept or (a > kept[-1][0] and b >= kept[-1][1]):
            kept.append((a, b))
    return kept


def steps_to_seconds(points: Points, step_time: Points, t0: float) -> Points | None:
    """Each point's step as seconds since t0; None when no step was recorded with its time."""
    table = _monotone(step_time)
    if not table:
        return None
    xs, ts = [s for s, _ in table], [t for _, t in table]
    return [(_interp(x, xs, ts) - t0, y) for x, y in points]


def seconds_to_steps(points: Points, step_time: Points) -> Points | None:
    """Each time-stamped point as the step the job was at then; None without recorded steps."""
    table = _monotone(step_time)
    if not table:
        return None
    ts, xs = [t for _, t in table], [s for s, _ in table]
    return [(_interp(x, ts, xs), y) for x, y in points]
