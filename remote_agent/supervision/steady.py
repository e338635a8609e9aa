"""Which periodic records a supervisor writes: a steady job's heartbeats and GPU samples are thinned.

A week-long job wrote a heartbeat and a GPU sample every 10 s whether anything changed or not.
Both are kept exact where a reader uses them, and thinned where they only repeat:

- a heartbeat is written when `output_offset` moved since the last one (adoption resumes there),
  else once every STEADY_EVERY intervals (a quiet job still shows it lives, `lost_at` stays close).
  A supervisor counts from its start (`started`): a job that prints nothing writes its first
  heartbeat a repeat's interval in, and its loop sleeps until then (issue 33: idle costs nothing);
- a GPU sample is written when any GPU's util or memory used differs from the last written sample
  (or the set of GPUs does), else once every STEADY_EVERY intervals. Readers hold a sample's values
  until the next one (cost's idle intervals, the rules' windows), so a skipped sample, equal in those
  fields, changes none of them; its temperature and power are what is lost between samples.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

STEADY_EVERY = 6  # a repeat is still written every this many intervals (60 s at the default 10 s)
_GPU_KEYS = ("uuid", "index", "util", "mem_used_mib")


class Steady:
    """Remembers the last written heartbeat offset and GPU sample; says whether the next is due."""

    def __init__(self, heartbeat_every: float, gpu_every: float, started: Optional[float] = None) -> None:
        # Every STEADY_EVERY intervals, less half of one: the loop wakes when a record falls due,
        # give or take its tick (supervisor.py), and a repeat must not slip to the interval after.
        self._beat_every = (STEADY_EVERY - 0.5) * heartbeat_every
        self._gpu_every = (STEADY_EVERY - 0.5) * gpu_every
        # (output_offset, monotonic time) last written; from `started`, offset 0 counts as written then
        self._beat: Optional[Tuple[int, float]] = None if started is None else (0, started)
        self._gpus: Optional[Tuple[List[Tuple[Any, ...]], float]] = None

    def heartbeat_due(self, offset: int, now: float) -> bool:
        last = self._beat
        return last is None or offset != last[0] or now - last[1] >= self._beat_every

    def quiet_until(self, offset: int) -> Optional[float]:
        """When a heartbeat next falls due if the output stays at `offset` (None: it is due at the
        next interval, the output moved); the loop sleeps until then."""
        last = self._beat
        return None if last is None or offset != last[0] else last[1] + self._beat_every

    def heartbeat_written(self, offset: int, now: float) -> None:
        self._beat = (offset, now)

    def gpu_due(self, gpus: List[Dict[str, Any]], now: float) -> bool:
        last = self._gpus
        return last is None or _gpu_key(gpus) != last[0] or now - last[1] >= self._gpu_every

    def gpu_written(self, gpus: List[Dict[str, Any]], now: float) -> None:
        self._gpus = (_gpu_key(gpus), now)


def _gpu_key(gpus: List[Dict[str, Any]]) -> List[Tuple[Any, ...]]:
    return [tuple(g.get(k) for k in _GPU_KEYS) for g in gpus]
