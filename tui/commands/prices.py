"""`gpudeck prices`: every price gpudeck knows and where it comes from: hosts first, then the catalog."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..cost import catalog
from ..cost.settings import host_price
from ..format import local_time, table
from ..session import Session
from .cost import host_settings


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("prices", help="known prices: each host's, and the shipped catalog, with sources")
    p.add_argument("--json", action="store_true", help="JSON with hosts and catalog")


def billed_spot(name: str) -> tuple[float, str, str] | None:
    """The spot price `gpudeck cost` last billed this host at (its live quote, kept in the ledger):
    `prices` asks no provider, and without it a spot host read "unknown" here while `cost` priced it."""
    import sqlite3

    from .. import paths
    from ..cost.ledger import Ledger

    if not paths.state_db().exists():
        return None
    try:
        ledger = Ledger.read_only_copy(paths.state_db())
    except (OSError, sqlite3.Error):
        return None
    try:
        rows = ledger.prices(name)
    finally:
        ledger.close()
    last = rows[-1] if rows else None
    if last is None or last.per_hour is None or (last.data or {}).get("market") != "spot":
        return None
    when = local_time(last.at)
    return (
        last.per_hour,
        last.currency or "USD",
        f"spot quote `gpudeck cost` billed at {when} ({last.source})",
    )


def host_rows(session: Session) -> list[dict[str, Any]]:
    out = []
    for name in session.hosts():
        settings = host_settings(name)
        spot = billed_spot(name) if settings.get("market") == "spot" else None
        price = host_price(settings, spot)
        out.append(
            {
                "host": name,
                "per_hour": price.per_hour,  # null: unknown
                "currency": price.currency,
                "market": price.market,
                "source": price.source,
                "provider": price.provider,
                "instance_type": price.instance_type,
                "region": price.region,
                "instance_id": price.instance_id,
            }
        )
    return out


def run(args: argparse.Namespace, session: Session) -> int:
    hosts = host_rows(session)  # settings only: no host is contacted, no provider asked
    entries = catalog.entries()
    if args.json:
        print(json.dumps({"hosts": hosts, "catalog": [e.to_json() for e in entries]}, indent=2))
        return 0
    print(
        table(
            ["HOST", "PRICE/H", "MARKET", "SOURCE"],
            [
                [
                    h["host"],
                    f"{h['per_hour']} {h['currency']}" if h["per_hour"] is not None else catalog.UNKNOWN,
                    h["market"],
                    h["source"],
                ]
                for h in hosts
            ],
        )
    )
    print()

    def usd(value: float | None) -> str:
        return catalog.UNKNOWN if value is None else f"{value:g}"

    print(
        table(
            ["PROVIDER", "INSTANCE", "REGION", "GPUS", "ON-DEMAND $/H", "SPOT $/H", "AS OF", "SOURCE"],
            [
                [
                    e.provider,
                    e.instance_type,
                    e.region or "-",
                    f"{e.gpus or '?'}x {e.gpu_model or '?'}",
                    usd(e.on_demand_usd_per_hour),
                    usd(e.spot_usd_per_hour_low)
                    if e.spot_usd_per_hour_low is None
                    else f"{e.spot_usd_per_hour_low:g}-{usd(e.spot_usd_per_hour_high)}",
                    e.as_of or catalog.UNKNOWN,
                    e.source[:60],
                ]
                for e in entries
            ],
        )
    )
    return 0
