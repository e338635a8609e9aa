"""`run --hold-on-fail DURATION`: a failed job's node kept for debugging (remote_agent/supervision/
hold.py); what clients make of a hold: whether it holds now, and the words ps/inspect/the TUI use."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..fleet.holds import held_text

__all__ = ["held_text", "held_on", "held_until", "parse_hold_on_fail"]

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_hold_on_fail(text: str | None) -> float | None:
    """`--hold-on-fail 2h` (90s, 30m, 2h, 1d) as seconds; None when not given."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd]?)\s*", text.lower())
    seconds = float(m.group(1)) * UNITS[m.group(2) or "s"] if m else 0.0
    from remote_agent.spec import MAX_HOLD  # here: `ps` reads holds and must not load the typed spec

    if not 1 <= seconds <= MAX_HOLD:
        from .options import usage  # here: `ps` reads holds and must not load the launch options

        raise usage(f"--hold-on-fail {text!r}: a duration (90s, 30m, 2h, 1d), at most 30 days")
    return seconds


def held_until(nodes: Iterable[Mapping[str, Any]], now: float | None = None) -> float | None:
    """The latest hold of a job's nodes that still holds now (epoch seconds), or None."""
    now = time.time() if now is None else now
    holds = [n.get("held_until") for n in nodes]
    live = [h for h in holds if isinstance(h, (int, float)) and not isinstance(h, bool) and h > now]
    return max(live) if live else None


def held_on(agents: Any, host: str) -> str | None:
    """Why `host` is kept for a failed job's debugging now (`held for debugging until 14:05 (job J)`),
    or None: none is held there, or its agent cannot say (then the rule judges as before)."""
    from ..errors import GpudeckError

    try:
        jobs = agents.request(host, "jobs")["jobs"]
    except (GpudeckError, KeyError, TypeError):
        return None
    holds = [
        (until, str(j.get("id"))) for j in jobs if isinstance(j, dict) for until in [held_until([j])] if until
    ]
    if not holds:
        return None
    until, job = max(holds)
    return f"{held_text(until)} (job {job})"
