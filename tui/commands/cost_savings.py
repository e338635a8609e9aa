"""`gpudeck cost`'s savings against on-demand (tui/cost/savings.py): the report built again with
each spot host priced on demand — nothing is recorded for it (no ledger), it is only a comparison."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ..cost.collect import HostSnapshot
from ..cost.quotes import on_demand_for_host
from ..cost.report import CostContext, build
from ..cost.savings import on_demand_price, savings
from ..cost.settings import HostPrice
from ..settings import CloudSettings


def savings_of(
    snaps: Sequence[HostSnapshot],
    prices: Mapping[str, HostPrice],
    ctx: CostContext,
    since: float | None,
    report: dict[str, Any],
    settings_of: Callable[[str], Mapping[str, Any]],
    chains_of: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    cloud: CloudSettings | None = None,
) -> dict[str, Any]:
    """`cloud`: where the providers are asked for a list price the catalog lacks (None: not asked)."""
    od_prices: dict[str, HostPrice] = {}
    for name, price in prices.items():
        settings = settings_of(name)
        live = None if cloud is None else partial(on_demand_for_host, settings, cloud)
        od = on_demand_price(settings, price, live)
        if od is not None:
            od_prices[name] = od
    chains = report.get("chains") or []
    if not od_prices and not chains:
        return {"hosts": [], "chains": [], "total": None}
    # an unknown on-demand price stays unknown in the rebuilt report (its jobs' figures are None)
    od_report = build(snaps, {**prices, **od_prices}, ctx, None, since, None)
    return savings(report, od_report, od_prices, chains, chains_of(od_report["jobs"]) if chains else [])
