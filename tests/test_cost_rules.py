"""The spec fields `gpudeck run` sends for the supervisor to enforce: price × share, budget, idle stop."""

from __future__ import annotations

import pytest

from tui.cost.rules import (
    CostRuleError,
    budget_status,
    fleet_today_over,
    launch_share,
    parse_idle_stop,
    spec_cost_fields,
)
from tui.cost.settings import PriceSettingsError, validate_price_settings


def test_parse_idle_stop() -> None:
    assert parse_idle_stop("30m@10%") == {"below_pct": 10.0, "minutes": 30.0, "grace_minutes": 15.0}
    assert parse_idle_stop("1h@5") == {"below_pct": 5.0, "minutes": 60.0, "grace_minutes": 15.0}
    assert parse_idle_stop("90s") == {"below_pct": 10.0, "minutes": 1.5, "grace_minutes": 15.0}
    assert parse_idle_stop("@20%") == {"below_pct": 20.0, "minutes": 30.0, "grace_minutes": 15.0}
    assert parse_idle_stop("20m@10%+1h") == {"below_pct": 10.0, "minutes": 20.0, "grace_minutes": 60.0}
    assert parse_idle_stop("off") is None and parse_idle_stop(None) is None
    for bad in ("soon", "30x", "@0%", "@150%", "0m"):
        with pytest.raises(CostRuleError, match="--idle-stop"):
            parse_idle_stop(bad)


def test_launch_share() -> None:
    assert launch_share(8, None) == 1.0  # no CUDA_VISIBLE_DEVICES: every GPU
    assert launch_share(8, "0,1") == 0.25
    assert launch_share(4, "GPU-aaa") == 0.25
    assert launch_share(0, None) == 1.0 and launch_share(0, None, other_live_jobs=1) == 0.5


def test_spec_cost_fields() -> None:
    settings = {"price_per_hour": 2.5, "idle_stop": "45m@5%"}
    fields = spec_cost_fields(settings, budget=50, share=0.5)
    assert fields == {
        "price": {
            "per_hour": 2.5,
            "currency": "USD",
            "share": 0.5,
            "market": "on-demand",
            "source": "hosts.toml price_per_hour",
        },
        "budget": 50.0,
        "idle_stop": {"below_pct": 5.0, "minutes": 45.0, "grace_minutes": 15.0},  # the host's default
    }
    assert "idle_stop" not in spec_cost_fields(settings, idle_stop="off")  # the option overrides the host
    with pytest.raises(CostRuleError, match="price is unknown"):
        spec_cost_fields({}, budget=10)
    with pytest.raises(CostRuleError, match="more than 0"):
        spec_cost_fields(settings, budget=0)
    assert spec_cost_fields({}) == {}


def test_idle_stop_is_a_checked_host_setting() -> None:
    assert validate_price_settings({"idle_stop": "30m@10%"}) == {"idle_stop": "30m@10%"}
    with pytest.raises(PriceSettingsError, match="idle_stop"):
        validate_price_settings({"idle_stop": "whenever"})


def test_budget_and_fleet_checks() -> None:
    assert (
        budget_status(39.9, 50) == "ok"
        and budget_status(40, 50) == "warning"
        and budget_status(50, 50) == "over"
    )
    assert budget_status(1, None) is None
    # $60 + ¥300 × 0.14 = $102 ≥ $100
    assert fleet_today_over({"USD": 60, "CNY": 300}, 100, "USD", {"CNY": 0.14}) is True
    assert fleet_today_over({"USD": 60, "CNY": 300}, 100, "USD", {}) is None
    assert fleet_today_over({"USD": 60}, None, "USD", {}) is None
    assert fleet_today_over({"USD": 100.0}, 100, "USD", {}) is True  # spent to the cent: over
