"""A GPU's recent memory, power and temperature readings: the wide layout's extra sparklines.

Bounded deques of the last TRAIL_POINTS samples (a sparkline is at most that many cells wide), so
keeping them costs three O(1) appends per GPU sample and a few KiB per GPU, whatever the terminal;
they are drawn only when the layout is wide (widgets/wide.py)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

TRAIL_POINTS = 64


def _trail() -> deque[float]:
    return deque(maxlen=TRAIL_POINTS)


@dataclass
class GpuTrail:
    mem_pct: deque[float] = field(default_factory=_trail)
    power_w: deque[float] = field(default_factory=_trail)
    temp_c: deque[float] = field(default_factory=_trail)
    _t: float | None = None  # time of the last reading, and which of its values were kept
    _kept: tuple[bool, bool, bool] = (False, False, False)

    def add(self, t: float, mem_pct: float | None, power_w: float | None, temp_c: float | None) -> None:
        """One reading at time t; a second one at the same t replaces it (latest wins, as in a
        Series: a poll answered twice in a clock tick is one point). An unknown value adds
        nothing (never drawn as 0)."""
        trails = (self.mem_pct, self.power_w, self.temp_c)
        if t == self._t:
            for trail, kept in zip(trails, self._kept, strict=True):
                if kept:
                    trail.pop()
        values = (mem_pct, power_w, temp_c)
        for trail, v in zip(trails, values, strict=True):
            if v is not None:
                trail.append(v)
        self._t, self._kept = t, (mem_pct is not None, power_w is not None, temp_c is not None)
