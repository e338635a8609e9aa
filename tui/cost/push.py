"""Tell a host's agent its price changed (`price` op), so running budgets follow it from the moment it
changed instead of holding the price their job was launched at. Blocking: CLI or a worker thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .settings import HostPrice

PUSH_TIMEOUT = 10.0


def push_price(request: Callable[..., Any], price: HostPrice, at: float | None) -> str | None:
    """Send the host's price (per_hour None: removed) dated `at` (host clock; None: now), through
    `request(op, timeout=…, **args)`: a client's, or the TUI's connections' for one host.
    Returns None when the agent has it (or nothing was sent), else one line saying why it could not
    be told. A spot host whose live quote this caller does not have is not told "unknown": that is
    not a removal, only a price this caller cannot see."""
    if price.per_hour is None and price.market == "spot":
        return None
    if price.per != "host":  # a Slurm rate: each node's spec holds rate x its GPUs; running ones keep it
        return None
    try:
        request("price", timeout=PUSH_TIMEOUT, per_hour=price.per_hour, currency=price.currency, at=at)
    except Exception as exc:  # an older agent (unknown op), a host down: the next read tells it
        return f"running jobs keep their launch price until gpudeck reaches the host again ({exc})"
    return None
