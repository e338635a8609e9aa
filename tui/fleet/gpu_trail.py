"""A GPU's recent memory, power and temperature readings: the wide layout's extra sparklines.

A bounded deque of the last TRAIL_POINTS readings (a sparkline is at most that many cells wide),
so keeping them costs one O(1) append per GPU sample and a few KiB per GPU, whatever the terminal;
the values are taken out only when the layout is wide (widgets/wide.py) and a panel draws."""

from __future__ import annotations

from collections import deque

TRAIL_POINTS = 64
Reading = tuple[float, float | None, float | None, float | None]  # t, memory %, power W, temperature °C


class GpuTrail:
    __slots__ = ("readings",)

    def __init__(self) -> None:
        self.readings: deque[Reading] = deque(maxlen=TRAIL_POINTS)

    def add(self, t: float, mem_pct: float | None, power_w: float | None, temp_c: float | None) -> None:
        """One reading at time t; a second one at the same t replaces it (latest wins, as in a
        Series: a poll answered twice in a clock tick is one point)."""
        readings = self.readings
        if readings and readings[-1][0] == t:
            readings[-1] = (t, mem_pct, power_w, temp_c)
        else:
            readings.append((t, mem_pct, power_w, temp_c))

    def _values(self, i: int) -> list[float]:
        """One quantity's known values, oldest first: an unknown reading is left out, never a 0."""
        return [v for r in self.readings if (v := r[i]) is not None]

    @property
    def mem_pct(self) -> list[float]:
        return self._values(1)

    @property
    def power_w(self) -> list[float]:
        return self._values(2)

    @property
    def temp_c(self) -> list[float]:
        return self._values(3)
