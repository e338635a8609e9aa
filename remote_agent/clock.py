"""The agent's two clocks: wall time (journal timestamps, dated price changes) and monotonic time
(every duration: budgets, idle stops, leads, heartbeats).

Wall time can be stepped for a test, as an NTP step or an admin's `date -s` would: with
GPUDECK_CLOCK_STEP_FILE set, the number of seconds that file holds is added to time.time(). The
file is read again only when it changes (one stat a call). Monotonic time is never stepped.

Standard library only (the agent's rule).
"""

from __future__ import annotations

import os
import time
from typing import Optional, Tuple

STEP_FILE_VAR = "GPUDECK_CLOCK_STEP_FILE"

_seen: Tuple[Optional[Tuple[int, int]], float] = (None, 0.0)


def _step() -> float:
    global _seen
    path = os.environ.get(STEP_FILE_VAR)
    if not path:
        return 0.0
    try:
        st = os.stat(path)
    except OSError:
        return 0.0
    stamp = (st.st_mtime_ns, st.st_size)
    if stamp != _seen[0]:
        try:
            with open(path, "rb") as f:
                step = float(f.read().decode("ascii").strip() or 0)
        except (OSError, ValueError):
            step = 0.0
        _seen = (stamp, step)
    return _seen[1]


def wall() -> float:
    """The host's clock, epoch seconds (stepped where a test asks)."""
    return time.time() + _step()


def monotonic() -> float:
    """Seconds that only ever go forward at the rate of real time: for durations."""
    return time.monotonic()
