"""A job's CPU use from its process tree (/proc), between two looks: how many cores the whole tree
kept busy, and the busiest single process (a Python process cannot use more than one core for
its Python code: a single-process data loader saturates at 1.0). Standard library only."""

from __future__ import annotations

import os
from typing import Dict, Iterable, Optional, Tuple

from .procs import _TICKS, cpu_ticks


def cores_available() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class JobCpu:
    """Feed it the tree at each look; it answers (tree cores, busiest process cores) since the last."""

    def __init__(self) -> None:
        self._ticks: Dict[int, int] = {}
        self._at: Optional[float] = None

    def look(self, pids: Iterable[int], now: float) -> Optional[Tuple[float, float]]:
        ticks = {}
        for pid in pids:
            t = cpu_ticks(pid)
            if t is not None:
                ticks[pid] = t
        before, at = self._ticks, self._at
        self._ticks, self._at = ticks, now
        if at is None or now <= at:
            return None
        spent = [(t - before[pid]) / float(_TICKS) for pid, t in ticks.items() if pid in before]
        if not spent:
            return None
        span = now - at
        return sum(spent) / span, max(spent) / span
