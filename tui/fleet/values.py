"""Tolerant readers for values that come from a remote: never raise, answer None instead."""

from __future__ import annotations

import math
from typing import Any

from ..printable import printable

# The wire spelling of non-finite floats (JSON has none).
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "+inf": math.inf}


def num(v: Any) -> float | None:
    """A float from an int/float or from "nan"/"inf"/"-inf"; None for anything else (bools too)."""
    kind = type(v)  # the common cases first: this runs for every value of every metric record
    if kind is float:
        return v  # type: ignore[no-any-return]
    if kind is int:
        return float(v)
    if v is None or kind is bool:
        return None
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        return _NONFINITE.get(v.strip().lower())
    return None


def finite(v: Any) -> float | None:
    """Like num() but only finite values: times, steps, percentages."""
    if v is None:
        return None
    f = num(v)
    return f if f is not None and math.isfinite(f) else None


def integer(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def text(v: Any, limit: int = 4096) -> str | None:
    """A string, cut to `limit` so garbage from a remote cannot grow the model, and printable: the
    model is what the TUI draws, and a name holding ESC must not reach the terminal as one."""
    return printable(v[:limit]) if isinstance(v, str) else None
