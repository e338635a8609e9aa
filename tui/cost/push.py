"""Tell a host's agent its price changed (`price` op), so running budgets follow it from the moment it
changed instead of holding the price their job was launched at. Blocking: CLI or a worker thread."""

from __future__ import annotations

from typing import Any

from .settings import HostPrice

PUSH_TIMEOUT = 10.0


def push_price(client: Any, price: HostPrice, at: float | None) -> str | None:
    """Send the host's price (None per_hour: removed) dated `at` (host clock; None: now).
    Returns None when the agent has it, else one line saying why it could not be told."""
    try:
        client.request("price", timeout=PUSH_TIMEOUT, per_hour=price.per_hour, currency=price.currency, at=at)
    except Exception as exc:  # an older agent (unknown op), a host down: the next read tells it
        return f"running jobs keep their launch price until gpudeck reaches the host again ({exc})"
    return None
