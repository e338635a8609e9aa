"""Each node's recent progress, as its job object carries it: `[t, step]` points (the host's clock)
and `[t, GPU %]` points, thinned to one per SLOT seconds (the newest of each slot) and bounded to
KEEP seconds, so a `jobs` answer stays small (at most KEEP / SLOT points per running node).

The window rates (windows.py) interpolate between kept points, so a 1 s slot costs a rate
nothing on steady stepping."""

from __future__ import annotations

from typing import Any, List

SLOT = 1.0  # seconds: one point kept per slot (the slot's newest)
_NUMBERS = (int, float)
KEEP = 600.0  # seconds of points kept: the longest sustain a judgement can prove (10 min)


def add_point(points: List[List[float]], t: Any, value: Any) -> None:
    """Append (t, value) to `points` in place: replaces the last point of the same slot, drops
    points older than KEEP before the newest; a non-number or a point back in time is ignored.
    Called for every metric record a node's reader folds: kept cheap (no call but this one)."""
    if type(t) not in _NUMBERS or type(value) not in _NUMBERS or t - t != 0 or value - value != 0:
        return  # not a finite int/float (bool is neither type)
    if points:
        last = points[-1]
        if t < last[0]:
            return  # a host clock stepped back: the window math needs time to move forward
        if last[0] // SLOT == t // SLOT:
            last[0], last[1] = t, value
            return
        if points[0][0] < t - KEEP:
            cut = 1
            while cut < len(points) and points[cut][0] < t - KEEP:
                cut += 1
            del points[:cut]
    points.append([t, value])


def mean_util(gpus: Any) -> Any:
    """The mean utilisation of one `gpu` record's GPUs (None when none reads a number)."""
    if not isinstance(gpus, list):
        return None
    utils: List[float] = [g["util"] for g in gpus if isinstance(g, dict) and _number(g.get("util"))]
    return sum(utils) / len(utils) if utils else None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) < 1e300
