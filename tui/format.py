"""Plain-text rendering for the CLI: durations, numbers, aligned tables."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Sequence
from typing import Any

from .printable import printable


def duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "-"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


def runtime(started_at: float | None, ended_at: float | None, now: float | None = None) -> str:
    if started_at is None:
        return "-"
    return duration((ended_at or now or time.time()) - started_at)


def number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value  # "nan", "inf": a diverging run shows as such
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))  # a step or a count read as a float: 12000, not 1.2e+04
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.3e}"
        if abs(value) >= 1e4:
            return f"{value:.1f}"  # 12345.6, not 1.235e+04
        return f"{value:.4g}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Aligned columns; every cell through printable() (names, causes and hosts are untrusted)."""
    rows = [[printable(str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    return "\n".join(lines)


def metric_line(values: dict[str, Any]) -> str:
    """step first, then loss, then the rest alphabetically: the order people scan."""
    order = ["step", "epoch", "loss", "lr"]
    keys = [k for k in order if k in values] + sorted(k for k in values if k not in order)
    return "  ".join(f"{k}={number(values[k])}" for k in keys)


def resized_text(data: dict[str, Any]) -> str:
    """A `resized` record in words: `resized 2 → 3 nodes at step 40 (scale +1), paused 12.3 s`."""

    def count(v: Any) -> str:
        return number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else "?"

    step = data.get("step")
    at = f" at step {count(step)}" if isinstance(step, (int, float)) else ""
    why = data.get("why")
    pause = data.get("pause_s")
    paused = (
        f", paused {pause:.1f} s" if isinstance(pause, (int, float)) and not isinstance(pause, bool) else ""
    )
    world = data.get("world_size")
    size = (
        f" (world size {count(world)})"
        if isinstance(world, (int, float)) and not isinstance(world, bool)
        else ""
    )
    return (
        f"resized {count(data.get('from'))} → {count(data.get('to'))} nodes{size}{at}"
        + (f" ({str(why)[:200]})" if isinstance(why, str) and why else "")
        + paused
    )


def money(value: float | None, currency: str = "USD", per: str = "", unknown: str = "—") -> str:
    """$1,234.56 / $0.123 / `unknown` for None: never $0 for a price nobody told us."""
    symbol = "$" if currency == "USD" else f"{currency} "
    if value is None:
        return f"{unknown} {symbol.strip()}{per}" if per and unknown == "—" else unknown
    return f"{symbol}{amount(value)}{per}"


def amount(value: float) -> str:
    """A sum with enough digits to be true: 1,234.56 / 0.123 / 0.005 / 0.00042 — never a 0.005
    budget shown as 0.01, nor a small cost as 0.000."""
    # Each band is chosen by the value as it will be rounded, so 0.9999 is "1.00", not "1.000".
    if abs(round(value, 2)) >= 10_000:
        return f"{value:,.0f}"
    # Below 1: at least 3 decimals, and 2 significant digits however small.
    decimals = min(10, max(3, 1 - math.floor(math.log10(abs(value))))) if value else 2
    if value == 0 or abs(round(value, decimals)) >= 1:
        return f"{value:,.2f}"
    text = f"{value:.{decimals}f}"
    while text.endswith("0") and len(text.split(".")[1]) > 3:
        text = text[:-1]
    return text


def local_time(t: float) -> str:
    """A moment for people, in their local zone: 2026-12-01 09:30 CET."""
    return dt.datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def step_rate(rate: float | None) -> str:
    """`2.0/s`, `0.8/s`, `120/s`: a node's step rate (issue 34), `—` when unknown."""
    if rate is None:
        return "—"
    return f"{rate:.0f}/s" if rate >= 100 else f"{rate:.2g}/s" if rate < 1 else f"{rate:.1f}/s"
