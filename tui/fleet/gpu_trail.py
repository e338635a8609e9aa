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

    def add(self, mem_pct: float | None, power_w: float | None, temp_c: float | None) -> None:
        """One sample; an unknown reading adds nothing (never drawn as 0)."""
        if mem_pct is not None:
            self.mem_pct.append(mem_pct)
        if power_w is not None:
            self.power_w.append(power_w)
        if temp_c is not None:
            self.temp_c.append(temp_c)
