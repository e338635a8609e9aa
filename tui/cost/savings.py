"""Savings against on-demand (`gpudeck cost`): for each spot host and each managed chain, what the
same hours would have cost on demand, beside what they cost, and the saving in money and %.

The on-demand figure is the same report built again with every spot host priced on demand: the same
runs, shares and provider minimums, only the price differs — so the two figures are comparable by
construction. The on-demand price is the host's `on_demand_price` (hosts.toml, in its `currency`),
else the shipped catalog's for the same provider, type and region, else the provider's own list price
where it has one live (Aliyun's DescribePrice; the catalog has no Aliyun figures). None known: "unknown", never a
made-up figure (and a total over an unknown part is unknown too).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..regions import region_of
from . import catalog
from .settings import HostPrice

ON_DEMAND_KEY = "on_demand_price"  # hosts.toml: what this host's type costs on demand, per hour


def on_demand_price(
    settings: Mapping[str, Any], price: HostPrice, live: Callable[[], Any] | None = None
) -> HostPrice | None:
    """The on-demand price of a spot host (per_hour None: unknown, `source` says why); None for a
    host that is not spot (its cost is its on-demand cost: nothing to compare). `live`: asked only
    when the catalog has none — the provider's own list price (tui/cost/quotes.py), an error line,
    or None."""
    if price.market != "spot":
        return None
    common: dict[str, Any] = {
        "provider": price.provider,
        "instance_type": price.instance_type,
        "region": price.region,
        "instance_id": price.instance_id,
    }
    raw = settings.get(ON_DEMAND_KEY)
    if raw is not None and not isinstance(raw, bool):
        try:
            value = float(raw)
        except (TypeError, ValueError):
            value = math.nan
        if math.isfinite(value) and value >= 0:
            currency = str(settings.get("currency") or "USD").upper()
            return HostPrice(value, currency, "on-demand", f"hosts.toml {ON_DEMAND_KEY}", **common)
    region = region_of(price.region, price.provider) or None
    entry = catalog.find(price.provider, price.instance_type, region)
    if entry is not None and entry.region not in (None, region):
        entry = None  # another region's list price is not this host's on-demand price
    if entry is None or entry.on_demand_usd_per_hour is None:
        quote = live() if live is not None else None
        if isinstance(quote, tuple):
            per_hour, currency, source = quote
            return HostPrice(float(per_hour), str(currency), "on-demand", f"{source} (on demand)", **common)
        what = f"{price.provider or '?'} {price.instance_type or '?'} in {region or 'an unknown region'}"
        why = f"no {ON_DEMAND_KEY} set and the catalog has no on-demand price for {what}"
        why += f"; the provider: {quote}" if isinstance(quote, str) else ""
        return HostPrice(None, "USD", "on-demand", f"unknown ({why})", **common)
    where = f" {entry.region}" if entry.region else ""
    source = f"catalog {entry.provider} {entry.instance_type}{where} on-demand (as of {entry.as_of})"
    return HostPrice(entry.on_demand_usd_per_hour, "USD", "on-demand", source, **common)


def compare(paid: float | None, on_demand: float | None) -> dict[str, Any]:
    """The saving of `paid` against `on_demand` (both in the report's currency); None where unknown."""
    if paid is None or on_demand is None:
        return {"accrued_usd": paid, "on_demand_usd": on_demand, "saving_usd": None, "saving_pct": None}
    saving = round(on_demand - paid, 6)
    pct = round(100.0 * saving / on_demand, 1) if on_demand > 0 else None
    return {"accrued_usd": paid, "on_demand_usd": on_demand, "saving_usd": saving, "saving_pct": pct}


def savings(
    report: dict[str, Any],
    on_demand_report: dict[str, Any],
    od_prices: Mapping[str, HostPrice],
    chains: list[dict[str, Any]],
    od_chains: list[dict[str, Any]],
) -> dict[str, Any]:
    """`cost --json`'s `savings`: per spot host, per managed chain, and in total over the spot hosts."""
    od_hosts = {h["name"]: h for h in on_demand_report["hosts"]}
    hosts = []
    for h in report["hosts"]:
        od = od_prices.get(h["name"])
        if od is None:
            continue
        od_figure = od_hosts.get(h["name"], {}).get("accrued_usd") if od.known else None
        row = {"host": h["name"], "on_demand_per_hour": od.per_hour, "on_demand_currency": od.currency}
        hosts.append({**row, "on_demand_source": od.source, **compare(h["accrued_usd"], od_figure)})
    by_chain = {c["chain"]: c for c in od_chains}
    chain_rows = []
    for c in chains:
        od_chain = by_chain.get(c["chain"]) or {}
        # the same jobs on both sides, or no comparison (a job only the ledger still lists)
        same = set(od_chain.get("missing") or []) == set(c["missing"])
        od_figure = od_chain.get("accrued_usd") if same else None
        chain_rows.append({"chain": c["chain"], "name": c["name"], **compare(c["accrued_usd"], od_figure)})
    total = None
    if hosts:
        paid = [r["accrued_usd"] for r in hosts]
        od_all = [r["on_demand_usd"] for r in hosts]
        known = all(v is not None for v in paid + od_all)
        total = compare(round(sum(paid), 6), round(sum(od_all), 6)) if known else compare(None, None)
    return {"hosts": hosts, "chains": chain_rows, "total": total if hosts else None}


def savings_lines(s: dict[str, Any], money: Any) -> list[str]:
    """`gpudeck cost`'s text: one line per spot host and chain, then the total."""
    if not s or (not s["hosts"] and not s["chains"]):
        return []
    lines = ["savings against on-demand:"]

    def line(label: str, row: dict[str, Any], why: str = "") -> str:
        if row["saving_usd"] is None:
            od = "unknown" if row["on_demand_usd"] is None else money(row["on_demand_usd"])
            return f"  {label}: {money(row['accrued_usd'])}, on demand {od}: saving unknown{why}"
        pct = "" if row["saving_pct"] is None else f" ({row['saving_pct']:g} %)"
        return (
            f"  {label}: {money(row['accrued_usd'])}, on demand {money(row['on_demand_usd'])}: "
            f"saved {money(row['saving_usd'])}{pct}"
        )

    for h in s["hosts"]:
        why = f" ({h['on_demand_source']})" if h["on_demand_per_hour"] is None else ""
        lines.append(line(f"host {h['host']} (spot)", h, why))
    for c in s["chains"]:
        lines.append(line(f"chain {c['name']} ({c['chain']})", c))
    if s["total"] is not None and len(s["hosts"]) > 1:
        lines.append(line("spot hosts in all", s["total"]))
    return lines
