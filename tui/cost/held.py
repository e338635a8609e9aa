"""What a failed job held for debugging (--hold-on-fail) costs: from its end to the end of its hold
(or its release, or now), at the job's own price (its spec's `price`: the host's rate times the
job's share). Pure: the agents' job objects in, figures out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .billing import Money
from .collect import HostSnapshot


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def held_seconds(node: Mapping[str, Any], host_now: float) -> float:
    """How long the node has been (or was) held: its end → min(hold's end or release, now)."""
    until, ended = _number(node.get("held_until")), _number(node.get("ended_at"))
    if until is None or ended is None:
        return 0.0
    return max(0.0, min(until, host_now) - ended)


def held_by_job(snapshots: Iterable[HostSnapshot]) -> dict[str, tuple[float, Money | None]]:
    """job id → (seconds held, summed over nodes; their cost, None when a node's price is unknown)."""
    out: dict[str, tuple[float, Money | None]] = {}
    for snap in snapshots:
        for obj in snap.jobs:
            seconds = held_seconds(obj, snap.host_now)
            if seconds <= 0:
                continue
            total, money = out.get(str(obj.get("id")), (0.0, Money()))
            found = obj.get("price")
            price: dict[str, Any] = found if isinstance(found, dict) else {}
            rate, share = _number(price.get("per_hour")), _number(price.get("share", 1.0))
            if money is not None and rate is not None and share is not None:
                money = money.add(str(price.get("currency") or "USD"), rate * share * seconds / 3600.0)
            else:
                money = None
            out[str(obj.get("id"))] = (total + seconds, money)
    return out


def add_held(
    jobs: list[dict[str, Any]],
    snapshots: Iterable[HostSnapshot],
    convert: Callable[[Money | None], float | None],
) -> None:
    """Each job's `held_s` and `held_usd` (in the report's currency) beside its other figures."""
    held = held_by_job(snapshots)
    for job in jobs:
        seconds, money = held.get(str(job.get("id")), (0.0, None))
        job["held_s"] = round(seconds, 1) if seconds else None
        job["held_usd"] = convert(money) if seconds else None
