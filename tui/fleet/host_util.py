"""A host's GPU utilization as one series (mean over its GPUs, per second), from the samples the
TUI already holds: what the Cloud tab hands `tui.cloud.fleet.snapshot` as `host_util`, so a cloud
instance that is a gpudeck host is judged on gpudeck's own 1 Hz readings, not the provider's
1-minute metric. Plain data: copied on the app thread, read by the snapshot's worker thread."""

from __future__ import annotations

from collections import defaultdict

from .hosts import HostModel

Point = tuple[float, float]  # (epoch seconds on the client clock, GPU utilization %)


def util_points(host: HostModel, start: float, end: float) -> list[Point]:
    """(t, the busiest GPU's utilization) for each second in [start, end] with a reading: any busy
    GPU makes the host busy (a mean calls a p4d with one GPU at 30 % idle)."""
    by_second: dict[int, list[float]] = defaultdict(list)
    for series in host.util_series.values():
        for t, v in series.points():
            if start <= t <= end and v == v:  # nan: no reading
                by_second[int(t)].append(v)
    return [(float(t), max(vs)) for t, vs in sorted(by_second.items())]


def frozen_host_util(hosts: dict[str, HostModel], now: float, span: float = 3600.0) -> dict[str, list[Point]]:
    """Every host's last `span` seconds, copied (the worker must not read the live model)."""
    return {name: pts for name, h in hosts.items() if (pts := util_points(h, now - span, now))}
