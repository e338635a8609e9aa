"""The small value languages of policies.toml: durations ("5m"), days ("mon-fri"), windows ("09:00-18:00")."""

from __future__ import annotations

import datetime as dt
import re

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # index = date.weekday()
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(s|m|h|d)?\s*")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
_CLOCK = re.compile(r"([01]?[0-9]|2[0-3]):([0-5][0-9])")


def duration(text: object) -> float:
    """Seconds: "90s", "5m", "1.5h", "2d", or a bare number of seconds; ValueError otherwise."""
    if isinstance(text, (int, float)) and not isinstance(text, bool) and text >= 0:
        return float(text)
    m = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f'expected a duration such as "30s", "5m", "2h", got {text!r}')
    return float(m.group(1)) * _UNIT[m.group(2)]


def days(text: object) -> frozenset[int]:
    """Weekday numbers (Monday 0): "mon-fri", "sat,sun", "mon-wed,fri", "daily", "weekdays", "weekends"."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f'expected days such as "mon-fri" or "sat,sun", got {text!r}')
    if text.strip().lower() in ("daily", "all", "every day"):
        return frozenset(range(7))
    if text.strip().lower() in ("weekdays", "weekday"):
        return frozenset(range(5))
    if text.strip().lower() in ("weekends", "weekend"):
        return frozenset((5, 6))
    out: set[int] = set()
    for part in text.lower().replace(" ", "").split(","):
        first, _, last = part.partition("-")
        if first not in DAYS or (last and last not in DAYS):
            raise ValueError(f'{part!r} is not a day or a range of days (mon, tue, … sun; e.g. "mon-fri")')
        a, b = DAYS.index(first), DAYS.index(last or first)
        out.update(range(a, b + 1) if a <= b else [*range(a, 7), *range(0, b + 1)])  # "fri-mon" wraps
    return frozenset(out)


def window(text: object) -> tuple[dt.time, dt.time]:
    """("09:00", "18:00") as times; the end is exclusive and after the start (same day)."""
    parts = text.split("-") if isinstance(text, str) else []
    clocks = [_CLOCK.fullmatch(p.strip()) for p in parts]
    if len(parts) != 2 or not all(clocks):
        raise ValueError(f'expected a window such as "09:00-18:00", got {text!r}')
    start, end = (dt.time(int(m.group(1)), int(m.group(2))) for m in clocks if m)
    if end <= start:
        raise ValueError(f"{text!r}: the end must be after the start (a window across midnight: two rules)")
    return start, end


def show(seconds: float) -> str:
    """90 → "1m30s": how long, for reasons."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (sec, "s")) if v) or "0s"
