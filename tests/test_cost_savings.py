"""Issue 31: `gpudeck cost`'s savings against on-demand — for spot hosts and managed chains, what the
same hours would have cost on demand (the host's `on_demand_price`, else the catalog's for the same
type and region) beside what they cost; "unknown" when no on-demand price is known.

Prices are picked so the per-second rate is round: $0.36/h = $0.0001/s, $3.60/h = $0.001/s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.test_cost_counters import T0, journal
from tui.actions.options import LaunchOptions
from tui.commands.cost import render
from tui.commands.cost_savings import savings_of
from tui.cost import catalog
from tui.cost.collect import HostSnapshot
from tui.cost.report import CostContext, build
from tui.cost.savings import on_demand_price
from tui.cost.settings import HostPrice, host_price, validate_price_settings
from tui.managed.chain_cost import chain_costs
from tui.managed.records import Managed, ManagedDir, Policy

OLD, NEW = "20261205-100000-aaaaaa", "20261205-100500-bbbbbb"


def snap(name: str, *jobs: tuple[str, float, float]) -> HostSnapshot:
    objs = [{"id": j, "node": "0", "name": "train", "state": "exited"} for j, _, _ in jobs]
    return HostSnapshot(name, 0.0, T0 + 1000, [], None, objs, {(j, "0"): journal(a, b) for j, a, b in jobs})


def report_of(
    snaps: list[HostSnapshot], settings: dict[str, dict[str, Any]], chains: Any = None
) -> dict[str, Any]:
    """What `gpudeck cost` builds: the report, its chains, its savings."""
    prices = {s.name: host_price(settings[s.name]) for s in snaps}
    ctx = CostContext()
    report = build(snaps, prices, ctx, None, None, None)
    chains_of: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] = chains or (lambda jobs: [])
    report["chains"] = chains_of(report["jobs"])
    report["errors"] = []
    report["savings"] = savings_of(snaps, prices, ctx, None, report, lambda n: settings[n], chains_of)
    return report


SPOT = {"price_per_hour": 0.36, "market": "spot", "on_demand_price": 3.6}


def test_a_spot_host_saves_against_its_on_demand_price() -> None:
    report = report_of([snap("s", ("J", T0, T0 + 100))], {"s": SPOT})
    [row] = report["savings"]["hosts"]
    # the host is billed from its first job to now (1,000 s): $0.10 paid at $0.0001/s; at $0.001/s
    # on demand $1.00: saved $0.90, 90 %
    assert row["host"] == "s" and row["on_demand_source"] == "hosts.toml on_demand_price"
    assert row["accrued_usd"] == pytest.approx(0.1)
    assert row["on_demand_usd"] == pytest.approx(1.0)
    assert (row["saving_usd"], row["saving_pct"]) == (pytest.approx(0.9), 90.0)
    text = render(report)
    assert "savings against on-demand:" in text
    assert "host s (spot): $0.100, on demand $1.00: saved $0.900 (90 %)" in text


def test_the_catalog_gives_the_on_demand_price_for_the_same_type_and_region() -> None:
    entry = catalog.find("aws", "g5.xlarge", "us-east-1")
    assert entry is not None and entry.on_demand_usd_per_hour is not None
    settings = {"market": "spot", "provider": "aws", "instance_type": "g5.xlarge", "region": "us-east-1b"}
    od = on_demand_price(settings, host_price({**settings, "price_per_hour": 0.4}))
    assert od is not None and od.per_hour == entry.on_demand_usd_per_hour
    assert od.source.startswith("catalog aws g5.xlarge us-east-1 on-demand")
    # another region's list price is not this host's: unknown, with the reason
    elsewhere = {**settings, "region": "eu-west-1a"}
    od = on_demand_price(elsewhere, host_price({**elsewhere, "price_per_hour": 0.4}))
    assert od is not None and od.per_hour is None and "eu-west-1" in od.source
    # an on-demand host has nothing to compare
    assert on_demand_price({}, HostPrice(1.0, "USD", "on-demand", "x")) is None


def test_no_on_demand_price_known_is_unknown_never_a_figure() -> None:
    settings = {"s": {"price_per_hour": 0.36, "market": "spot", "provider": "other", "instance_type": "x1"}}
    report = report_of([snap("s", ("J", T0, T0 + 100))], settings)
    [row] = report["savings"]["hosts"]
    assert row["accrued_usd"] == pytest.approx(0.1)
    assert (row["on_demand_usd"], row["saving_usd"], row["saving_pct"]) == (None, None, None)
    assert report["savings"]["total"]["saving_usd"] is None
    assert "on demand unknown: saving unknown (unknown (no on_demand_price set" in render(report)


def test_a_managed_chain_shows_its_saving_over_all_its_jobs(tmp_path: Path) -> None:
    mdir = ManagedDir(tmp_path / "managed")
    opts = LaunchOptions(argv=("python", "train.py"), host="s", name="run")
    step = {"from": OLD, "to": NEW, "why": "preempted", "at": T0 + 200}
    mdir.save(Managed(OLD, NEW, "t", opts, Policy(fallback=("t",)), recoveries=(step,)))
    snaps = [snap("s", (OLD, T0, T0 + 100)), snap("t", (NEW, T0 + 300, T0 + 500))]
    settings = {"s": SPOT, "t": {"price_per_hour": 0.72, "market": "spot", "on_demand_price": 3.6}}
    report = report_of(snaps, settings, lambda jobs: chain_costs(jobs, mdir))
    [c] = report["savings"]["chains"]
    # paid 100 s × $0.0001 + 200 s × $0.0002 = $0.05; on demand 300 s × $0.001 = $0.30
    assert c["chain"] == OLD and c["accrued_usd"] == pytest.approx(0.05)
    assert c["on_demand_usd"] == pytest.approx(0.3)
    assert (c["saving_usd"], c["saving_pct"]) == (pytest.approx(0.25), pytest.approx(83.3))
    # the spot hosts in all, each billed from its first job to now: s 1,000 s ($0.10 vs $1.00),
    # t 700 s ($0.14 vs $0.70)
    total = report["savings"]["total"]
    assert (total["accrued_usd"], total["on_demand_usd"]) == (pytest.approx(0.24), pytest.approx(1.7))
    assert f"chain run ({OLD}): $0.050, on demand $0.300: saved $0.250 (83.3 %)" in render(report)


def test_on_demand_price_is_checked_like_the_other_prices() -> None:
    assert validate_price_settings({"on_demand_price": "1.5"}) == {"on_demand_price": 1.5}
    with pytest.raises(ValueError, match="on_demand_price: expected a number"):
        validate_price_settings({"on_demand_price": "lots"})


def test_an_aliyun_spot_host_is_compared_with_the_providers_own_list_price(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support.aliyun import serving
    from tui.settings import CloudSettings

    settings = {
        "s": {
            "price_per_hour": 3.6,
            "currency": "CNY",
            "market": "spot",
            "provider": "aliyun",
            "instance_type": "ecs.gn7i-c8g1.2xlarge",
            "region": "cn-hangzhou-i",
        }
    }
    assert catalog.find("aliyun", "ecs.gn7i-c8g1.2xlarge", "cn-hangzhou") is not None  # a row, no price
    snaps = [snap("s", ("J", T0, T0 + 100))]
    prices = {"s": host_price(settings["s"])}
    ctx = CostContext(currency="CNY")
    report = build(snaps, prices, ctx, None, None, None)
    report["chains"] = []
    with serving(monkeypatch) as aliyun:  # DescribePrice: CNY 10.8/h for this type
        saved = savings_of(
            snaps, prices, ctx, None, report, lambda n: settings[n], lambda j: [], CloudSettings()
        )
        asked = [c for c in aliyun.account.calls if c.get("Action") == "DescribePrice"]
    [row] = saved["hosts"]
    assert asked and asked[0]["InstanceType"] == "ecs.gn7i-c8g1.2xlarge"
    # 1,000 s: CNY 1.00 paid at 3.6/h; CNY 3.00 at 10.8/h on demand
    assert (row["on_demand_per_hour"], row["on_demand_currency"]) == (10.8, "CNY")
    assert row["accrued_usd"] == pytest.approx(1.0) and row["on_demand_usd"] == pytest.approx(3.0)
    assert row["saving_pct"] == pytest.approx(66.7)
