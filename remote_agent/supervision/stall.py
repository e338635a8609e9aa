"""A hang is no progress, whatever the GPU says (issue 34): the supervisor judges its job by its own
pace. A job that steps is `stalled` when no new step came for
  after (the spec's `stall.after`), or, `auto`, max(K × its median step interval, 1.5 × the
  longest pause between steps it already took and came back from (a checkpoint, an evaluation,
  a compile), FLOOR);
a job that prints output but no steps is judged the same way on its output's silence. A job that
has printed nothing yet is not judged (no pace to learn). The flag goes when progress comes back.
Times are monotonic. Standard library only (the agent's rule).
"""

from __future__ import annotations

import os
from collections import deque
from itertools import repeat
from typing import Any, Deque, Dict, Iterable, List, Mapping, Optional, Tuple

K = 10  # × the median step interval
FLOOR = 600.0  # seconds: the least silence called a hang in auto (GPUDECK_STALL_FLOOR: tests, tuning)
FLOOR_VAR = "GPUDECK_STALL_FLOOR"
KEPT = 200  # step intervals kept for the median


def floor() -> float:
    try:
        return max(0.1, float(os.environ.get(FLOOR_VAR, FLOOR)))
    except ValueError:
        return FLOOR


def _has_step(body: Dict[str, Any]) -> bool:
    values = body.get("values")
    return isinstance(values, dict) and isinstance(values.get("step"), (int, float))


class StallWatch:
    def __init__(self, spec: Mapping[str, Any]) -> None:
        asked = spec.get("stall") if isinstance(spec.get("stall"), dict) else {}
        after = asked.get("after") if asked else None
        self.after: Optional[float] = float(after) if isinstance(after, (int, float)) else None
        self.action = str(asked.get("action") or "notify") if asked else "notify"
        self.off = self.after == 0
        self.floor = floor()
        self.intervals: Deque[float] = deque(maxlen=KEPT)
        self.longest = 0.0  # the longest gap between two steps (or outputs) it came back from
        self.last_step: Optional[float] = None
        self.last_output: Optional[float] = None
        self.stepped = False
        self.stalled_since: Optional[float] = None

    def saw(self, entries: List[Tuple[str, Dict[str, Any]]], now: float) -> Optional[str]:
        """Output came (with these journal entries); the note to journal when it ends a stall."""
        came_back = self.stalled_since is not None
        if self.last_output is not None and not self.stepped:
            self.longest = max(self.longest, now - self.last_output)
        self.last_output = now
        steps = sum(1 for kind, body in entries if kind == "metric" and _has_step(body))
        if steps:
            # Each step is an interval since the one before; a chunk's steps share `now`, so all
            # but the first are 0 (one count, not a loop body per event in a flood: issue 33).
            if self.last_step is not None:
                gap = now - self.last_step
                self.intervals.append(gap)
                self.longest = max(self.longest, gap)
            self.intervals.extend(repeat(0.0, min(steps - 1, KEPT)))
            self.last_step, self.stepped = now, True
        if came_back and (self.stepped and self.last_step == now or not self.stepped):
            since, self.stalled_since = self.stalled_since, None
            return "progress again after %.0f s" % (now - (since or now))
        return None

    def limit(self) -> float:
        if self.after is not None:
            return self.after
        median = _median(self.intervals) if self.intervals else 0.0
        return max(K * median, 1.5 * self.longest, self.floor)

    def due(self) -> Optional[float]:
        """When `check` may find a stall (monotonic), if no progress comes first; None: it cannot
        (off, already flagged, or nothing printed yet). The loop wakes then, not every second."""
        if self.off or self.stalled_since is not None:
            return None
        last = self.last_step if self.stepped else self.last_output
        return None if last is None else last + self.limit()

    def check(self, now: float) -> Optional[Dict[str, Any]]:
        """The stall's record (once per stall), or None."""
        if self.off or self.stalled_since is not None:
            return None
        last = self.last_step if self.stepped else self.last_output
        if last is None:
            return None
        quiet, limit = now - last, self.limit()
        if quiet < limit:
            return None
        self.stalled_since = now
        median = _median(self.intervals) if self.intervals else None
        what = "no step" if self.stepped else "no output"
        why = "%s for %s" % (what, _span(quiet))
        if median is not None:
            why += "; median step %.1f s" % median
        return {
            "why": why,
            "quiet_s": round(quiet, 1),
            "limit_s": round(limit, 1),
            "median_step_s": None if median is None else round(median, 3),
            "action": self.action,
        }


def _span(seconds: float) -> str:
    return "%.0f s" % seconds if seconds < 120 else "%.0f min" % (seconds / 60)


def _median(values: Iterable[float]) -> float:
    """statistics.median, without importing statistics (and decimal, fractions) in every supervisor."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
