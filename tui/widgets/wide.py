"""When the layout is wide: a terminal of at least 180 columns and 50 rows (issue #17's 220×60).

Wide, the host panels draw memory, power and temperature sparklines per GPU besides utilization,
and the jobs table adds a loss trend, tokens/s, burn and ETA columns. Below it none of that is
computed, so a normal terminal pays nothing for it."""

from __future__ import annotations

from textual.geometry import Size

WIDE_COLUMNS = 180
WIDE_ROWS = 50


def is_wide(size: Size) -> bool:
    return size.width >= WIDE_COLUMNS and size.height >= WIDE_ROWS
