"""What `gpudeck run` (and the TUI's launch form) put into a job spec for the supervisor to enforce:
`price` (with the job's share), `budget`, `idle_stop`. Parsing and checks only; no IO.

    spec.update(spec_cost_fields(host_settings, budget=50, idle_stop="30m@10%", share=launch_share(...)))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from remote_agent.supervision.autostop import WARN_FRACTION as BUDGET_WARN_FRACTION

from .idle import CostRuleError, parse_idle_stop
from .settings import HostPrice, host_price

__all__ = [
    "BUDGET_WARN_FRACTION",
    "CostRuleError",
    "budget_status",
    "launch_share",
    "parse_idle_stop",
    "spec_cost_fields",
]


def launch_share(host_gpus: int, cuda_visible_devices: str | None, other_live_jobs: int = 0) -> float:
    """The job's share of its host at launch, for the supervisor's budget arithmetic.

    With GPUs: its GPUs / the host's (CUDA_VISIBLE_DEVICES entries; unset: all). Without: split
    with the jobs already running. A later neighbour sharing its GPU is not foreseen, so the
    supervisor's figure can only be too high: a budget stops early, never late.
    """
    if host_gpus <= 0:
        return 1.0 / (1 + max(0, other_live_jobs))
    if cuda_visible_devices is None:
        return 1.0
    entries = [e for e in cuda_visible_devices.split(",") if e.strip()]
    if not entries:
        return 1.0  # CUDA_VISIBLE_DEVICES="" hides every GPU; the job still holds the host
    return max(1, min(len(entries), host_gpus)) / host_gpus


def spec_cost_fields(
    host_settings: Mapping[str, Any],
    budget: float | None = None,
    idle_stop: str | None = None,
    share: float = 1.0,
    price: HostPrice | None = None,
) -> dict[str, Any]:
    """The spec fields; the host's `idle_stop` setting is the default when the option is not given."""
    price = price or host_price(host_settings)
    out: dict[str, Any] = {}
    spec_price = price.spec_price(share)
    if spec_price is not None:
        out["price"] = spec_price
    if budget is not None:
        if budget <= 0:
            raise CostRuleError(f"--budget {budget:g}: must be more than 0")
        if spec_price is None:
            raise CostRuleError(
                "--budget: this host's price is unknown; set one: gpudeck hosts set HOST price_per_hour=…"
            )
        out["budget"] = float(budget)
    rule = parse_idle_stop(idle_stop if idle_stop is not None else _host_idle_default(host_settings))
    if rule is not None:
        out["idle_stop"] = rule
    return out


def _host_idle_default(host_settings: Mapping[str, Any]) -> str | None:
    value = host_settings.get("idle_stop")
    return value if isinstance(value, str) else None


def budget_status(accrued: float, budget: float | None, warn_at: float = BUDGET_WARN_FRACTION) -> str | None:
    """ok / warning (≥ 80 %, where the supervisor warns) / over, for colouring; None without a budget."""
    if budget is None:
        return None
    if accrued >= budget:
        return "over"
    return "warning" if accrued >= warn_at * budget else "ok"


def fleet_today_over(
    today_by_currency: Mapping[str, float], daily_budget: float | None, currency: str, fx: Mapping[str, float]
) -> bool | None:
    """The fleet's daily budget check the client enforces while it runs; None when undecidable."""
    if daily_budget is None:
        return None
    total = 0.0
    for cur, amount in today_by_currency.items():
        if cur == currency:
            total += amount
        elif cur in fx:
            total += amount * fx[cur]
        else:
            return None
    return total >= daily_budget
