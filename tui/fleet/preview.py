"""A job's series from the agent's `series` answer: its journal downsampled on the host.

Opening a long job draws this at once instead of waiting for its whole journal (issue 13: a
million points took ~20 s and 450 MB). The points go into the job's ordinary bounded Series, so
the chart, the axes and live points that follow need nothing special. Readers are total: a
malformed answer or point is skipped and counted.
"""

from __future__ import annotations

from typing import Any

from .jobs import MAX_GPUS, MAX_SERIES, JobEvent, JobModel, NodeModel
from .series import Series
from .values import finite, integer, text


def _points(v: Any) -> list[tuple[float, float]]:
    """[[x, y], …] as (x, y) sorted by x, finite only."""
    out = []
    for p in v if isinstance(v, list) else ():
        if isinstance(p, list) and len(p) == 2:
            x, y = finite(p[0]), finite(p[1])
            if x is not None and y is not None:
                out.append((x, y))
    out.sort(key=lambda p: p[0])
    return out


def _fill(series: Series, points: list[tuple[float, float]]) -> bool:
    added = False
    for x, y in points:
        added = series.add(x, y) or added
    return added


def apply_series(job: JobModel, node: NodeModel, host: str, answer: Any) -> tuple[set[str], int]:
    """Put a `series` answer for `node` into the job; (change tags, malformed parts skipped).
    The node's last_seq stays: its journal is still read in the background from there (the cost
    tracker reads a journal from seq 1), and its older points, behind what the answer filled in,
    are dropped by the Series at no cost; newer ones append as live points do."""
    if not isinstance(answer, dict):
        return set(), 1
    bad, changes = 0, set()
    metrics = answer.get("metrics")
    for key, body in list(metrics.items())[:MAX_SERIES] if isinstance(metrics, dict) else ():
        name = text(key, 64)
        axis = body.get("axis") if isinstance(body, dict) else None
        if name is None or axis not in ("step", "time"):
            bad += 1
            continue
        if name not in job.series:
            if len(job.series) >= MAX_SERIES:
                continue
            job.series[name] = Series()
            job._axis.setdefault(name, axis)
        if _fill(job.series[name], _points(body.get("points"))):
            changes.add("series")
    if _fill(job.step_time, _points(answer.get("step_time"))):
        changes.add("series")
    gpus = answer.get("gpus")
    for key, body in list(gpus.items())[:MAX_GPUS] if isinstance(gpus, dict) else ():
        index = integer(body.get("index")) if isinstance(body, dict) else None
        if not isinstance(key, str) or index is None:
            bad += 1
            continue
        gpu = (
            key if not key.startswith("index:") else f"{host}:{index}"
        )  # as the model keys a GPU without uuid
        if gpu not in job.gpu_host and len(job.gpu_host) >= MAX_GPUS:
            continue
        if gpu not in job.gpu_host:
            job.gpu_host[gpu] = host
            job.gpu_moves += 1  # the fleet's GPU → running job index follows it
        for field, into in (("util", job.gpu_util), ("mem", job.gpu_mem)):
            pts = _points(body.get(field))
            if pts and _fill(into.setdefault(gpu, Series(recent=512, buckets=512)), pts):
                changes.add("gpu")
    events = answer.get("events")
    if isinstance(events, list) and not job.events:
        for rec in events[-(job.events.maxlen or 200) :]:
            name = text(rec.get("event"), 128) if isinstance(rec, dict) else None
            t = finite(rec.get("t")) if isinstance(rec, dict) else None
            if name is None or t is None:
                bad += 1
                continue
            data = rec.get("data")
            job.events.append(JobEvent(t, node.node, name, data if isinstance(data, dict) else {}))
            changes.add("events")
    node.previewed = True
    if changes:
        job.version += 1
    return changes, bad
