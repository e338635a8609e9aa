"""GPU utilization series → what `cloud ls` shows and what `cloud idle` judges (pure, clock passed in).

A judgement needs data: an instance without a recent point is "no GPU metric", never 0 %, and is
never called idle; one whose points do not reach back over the whole window is not idle either.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Point

PERIOD = 60.0  # seconds per point (both providers' finest standard resolution)
STALE = 15 * 60.0  # a latest point older than this is not "now" (the monitoring agent stopped)


@dataclass(frozen=True)
class Utilization:
    now: float | None  # the latest point, if recent
    avg_1h: float | None
    window_avg: float | None  # the mean over the window asked (`cloud idle --for`)
    idle_since: float | None  # start of the trailing run of points under the threshold (with no gap)
    idle: bool  # under the threshold over the whole window, with data all along


def lookback(window: float) -> float:
    """How far back to fetch: enough to see when an idle stretch began (≤ 24 h of 1-min points)."""
    return min(86400.0, max(2 * window, 3 * 3600.0))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(
    points: list[Point], now: float, window: float, below: float, started: float | None = None
) -> Utilization:
    """`points`: the busiest GPU's utilization over time (any busy GPU makes the instance busy).
    `started`: when the instance (last) started: points before it belong to an earlier run (or to
    the host before it was this instance), so an instance is never idle for longer than it is up."""
    floor = started - PERIOD if started is not None else float("-inf")  # the first minute's point
    points = sorted(p for p in points if floor <= p[0] <= now + PERIOD)
    fresh = bool(points) and points[-1][0] >= now - STALE
    in_window = [v for t, v in points if t > now - window]  # (now - window, now], as CloudMonitor counts
    idle_since = None
    if fresh and points[-1][1] < below:
        idle_since = points[-1][0]
        for (t0, v0), (t1, _v1) in zip(reversed(points[:-1]), reversed(points[1:]), strict=True):
            if v0 >= below or t1 - t0 > STALE:  # a busy point or a hole in the data ends the run
                break
            idle_since = t0
    idle = idle_since is not None and idle_since <= now - window + PERIOD and bool(in_window)
    return Utilization(
        now=points[-1][1] if fresh else None,
        avg_1h=_mean([v for t, v in points if t > now - 3600]) if fresh else None,
        window_avg=_mean(in_window),
        idle_since=idle_since,
        idle=idle,
    )
