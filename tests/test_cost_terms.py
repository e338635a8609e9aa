"""Past costs are not re-billed (issue 32, item 3): a job is priced by the settings in force while it
ran — its price, its provider's minimum, its market — each change dated once, the same moment in the
ledger and in the agent's price file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_cost_counters import T0, journal
from tests.test_cost_truth import jobs_of, snap
from tui.cost.billing import PricePeriod
from tui.cost.ledger import Ledger
from tui.cost.report import CostContext, build, terms
from tui.cost.settings import HostPrice

OTHER = HostPrice(3.6, "USD", "on-demand", "hosts.toml price_per_hour", provider="other")
AWS = HostPrice(3.6, "USD", "on-demand", "hosts.toml price_per_hour", provider="aws")
SPOT = HostPrice(1.8, "USD", "spot", "aws spot quote", provider="aws")


def report(ledger: Ledger, price: HostPrice, changed_at: float, spot: list[PricePeriod] | None = None) -> Any:
    jobs = (
        ("PAST", journal(T0 + 10, T0 + 30), "exited"),  # 20 s under the first settings
        ("LATER", journal(T0 + 150, T0 + 170), "exited"),  # 20 s under the new ones
    )
    return jobs_of(
        build(
            [snap(T0 + 200, *jobs)],
            {"h": price},
            CostContext(),
            ledger,
            spot={"h": spot} if spot else None,
            settings_changed_at=changed_at,
        )
    )


def test_a_provider_change_does_not_apply_its_minimum_to_runs_before_it(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        ledger.record_price("h", T0, 3.6, "USD", OTHER.source, T0, terms(OTHER))
        jobs = report(ledger, AWS, changed_at=T0 + 100)  # provider = aws from T0+100, same price
        rows = ledger.prices("h")
    assert [(r.at, r.data["provider"]) for r in rows] == [(T0, "other"), (T0 + 100, "aws")]
    assert jobs["PAST"]["accrued_usd"] == pytest.approx(0.02)  # 20 s × $0.001: no minimum then
    assert jobs["LATER"]["accrued_usd"] == pytest.approx(0.06)  # AWS's 60 s minimum from then


def test_a_switch_to_spot_prices_only_the_time_after_it_with_the_spot_history(tmp_path: Path) -> None:
    history = [
        PricePeriod(float("-inf"), None, 1.8, "USD", "aws spot history")
    ]  # AWS: the last change before
    with Ledger(tmp_path / "state.db") as ledger:
        ledger.record_price("h", T0, 3.6, "USD", OTHER.source, T0, terms(AWS))
        jobs = report(ledger, SPOT, changed_at=T0 + 100, spot=history)
    assert jobs["PAST"]["accrued_usd"] == pytest.approx(0.06)  # on-demand $3.60/h, AWS 60 s minimum
    assert jobs["LATER"]["accrued_usd"] == pytest.approx(0.03)  # spot $1.80/h × 60 s
    # a market change back is dated too: the spot history stops pricing at it
    with Ledger(tmp_path / "back.db") as ledger:
        ledger.record_price("h", T0 - 100, 1.8, "USD", SPOT.source, T0 - 100, terms(SPOT))
        jobs = report(ledger, AWS, changed_at=T0 + 100, spot=None)
    assert jobs["PAST"]["accrued_usd"] == pytest.approx(0.03) and jobs["LATER"][
        "accrued_usd"
    ] == pytest.approx(0.06)


def test_a_market_change_at_the_same_price_opens_a_period_and_unchanged_terms_do_not(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        assert ledger.record_price("h", T0, 3.6, "USD", "a", T0, terms(AWS))
        assert not ledger.record_price("h", T0 + 5, 3.6, "USD", "a", T0 + 5, terms(AWS))
        assert ledger.record_price("h", T0 + 9, 3.6, "USD", "a", T0 + 9, {**terms(AWS), "market": "spot"})
        assert [r.data["market"] for r in ledger.prices("h")] == ["on-demand", "spot"]


@pytest.mark.slow
def test_hosts_set_dates_one_change_once_in_the_ledger_and_the_agents_price_file(
    gpudeck_home: Path, workdir: Path
) -> None:
    from tests.conftest import gpudeck

    (gpudeck_home / "hosts.toml").write_text("[hosts.local]\nprice_per_hour = 3.6\n")
    for value in ("price_per_hour=2", "provider=aws"):
        done = gpudeck("hosts", "set", "local", value, cwd=workdir)
        assert done.returncode == 0, done.stderr
    with Ledger(gpudeck_home / "state.db") as ledger:
        rows = ledger.prices("local")
    changes = json.loads((gpudeck_home / "local-agent" / "price.json").read_text())["changes"]
    # the price change: one timestamp, the same in both (it was two, seconds apart)
    assert [c["per_hour"] for c in changes] == [2.0] and changes[0]["at"] == rows[0].at
    # the provider change: its own row at the same price (the agent's file is prices only)
    assert [(r.per_hour, r.data["provider"]) for r in rows] == [(2.0, None), (2.0, "aws")]


def test_prices_shows_the_spot_price_cost_billed_for_a_spot_host(gpudeck_home: Path, workdir: Path) -> None:
    """Issue 32, item 6: `prices` said "unknown" for a spot host that `cost` priced by its live quote."""
    from tests.conftest import gpudeck

    (gpudeck_home / "hosts.toml").write_text(
        '[hosts.local]\nmarket = "spot"\nprovider = "aws"\ninstance_type = "g5.xlarge"\nregion = "us-east-1a"\n'
    )
    with Ledger(gpudeck_home / "state.db") as ledger:  # what `cost` recorded from the spot history
        ledger.record_price("local", T0, 0.43, "USD", "aws spot history us-east-1a", T0, terms(SPOT))
    result = gpudeck("prices", "--json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    [local] = json.loads(result.stdout)["hosts"]
    assert (local["per_hour"], local["market"]) == (0.43, "spot")
    assert (
        local["source"].startswith("spot quote `gpudeck cost` billed at")
        and "spot history" in local["source"]
    )
