"""A job's CPU demand from its process tree (/proc), between two looks: how many cores the whole
tree wanted, and the busiest single process's share of one core (a Python process's Python code
cannot use more than one: a single-process data loader saturates at 1.0).

Demand is time on a CPU plus time waiting on a run queue for one (/proc/PID/task/TID/schedstat,
summed over the threads), so a CPU-bound loader reads saturated on a loaded machine too, where
its CPU time alone would say it is idle half the time. A kernel without schedstat falls back to
CPU time (utime + stime). Standard library only."""

from __future__ import annotations

import os
from typing import Dict, Iterable, Optional, Tuple

from .procs import _TICKS, cpu_ticks

NS = 1e9


def cores_available() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def demand_seconds(pid: int) -> Optional[float]:
    """Seconds the process's threads ran or waited to run, since they started; None when gone."""
    total, found = 0.0, False
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        tids = []
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid), "rb") as f:
                fields = f.read().split()
            total += (int(fields[0]) + int(fields[1])) / NS
            found = True
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended between the listing and the read
    if found:
        return total
    ticks = cpu_ticks(pid)
    return None if ticks is None else ticks / float(_TICKS)


class JobCpu:
    """Feed it the tree at each look; it answers (tree cores, busiest process cores) since the last."""

    def __init__(self) -> None:
        self._spent: Dict[int, float] = {}
        self._at: Optional[float] = None

    def look(self, pids: Iterable[int], now: float) -> Optional[Tuple[float, float]]:
        spent = {}
        for pid in pids:
            s = demand_seconds(pid)
            if s is not None:
                spent[pid] = s
        before, at = self._spent, self._at
        self._spent, self._at = spent, now
        if at is None or now <= at:
            return None
        used = [max(0.0, s - before[pid]) for pid, s in spent.items() if pid in before]
        if not used:
            return None
        span = now - at
        return sum(used) / span, max(used) / span
