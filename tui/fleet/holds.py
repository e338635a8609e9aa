"""How a failed job held for debugging (--hold-on-fail) is said: ps, inspect, the TUI. Pure."""

from __future__ import annotations

import time


def held_text(until: float) -> str:
    """`held for debugging until 14:05` (local time; with the date when not today)."""
    local = time.localtime(until)
    same_day = time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d")
    return "held for debugging until " + time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", local)
