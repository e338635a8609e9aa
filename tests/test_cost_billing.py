"""Billing arithmetic against figures worked out by hand (prices chosen so cents come out round)."""

from __future__ import annotations

import math

import pytest

from tui.cost.billing import (
    Money,
    PricePeriod,
    accrue,
    convert,
    minimum_seconds,
    periods_from_changes,
    price_at,
)

INF = math.inf
FLAT = [PricePeriod(-INF, None, 3.6)]  # $3.60/h = $0.001 per second


def test_per_second_billing() -> None:
    # 90 s × $0.001/s = $0.09; 1 h 30 min = 5400 s → $5.40
    assert accrue(FLAT, 1000, 1090).get() == pytest.approx(0.09, abs=1e-12)
    assert accrue(FLAT, 0, 5400).get() == pytest.approx(5.40, abs=1e-12)
    assert accrue(FLAT, 50, 50).amounts == {}


def test_aws_linux_minimum_is_sixty_seconds() -> None:
    assert minimum_seconds("aws") == 60 and minimum_seconds("AWS", "linux") == 60
    assert (
        minimum_seconds("aws", "windows") == 0
        and minimum_seconds("aliyun") == 0
        and minimum_seconds(None) == 0
    )
    # 20 s on AWS is billed as 60 s: 60 × 0.001 = $0.06; 20 s elsewhere: $0.02; 61 s: $0.061.
    assert accrue(FLAT, 0, 20, minimum=60).get() == pytest.approx(0.06)
    assert accrue(FLAT, 0, 20).get() == pytest.approx(0.02)
    assert accrue(FLAT, 0, 61, minimum=60).get() == pytest.approx(0.061)


def test_spot_price_change_mid_run() -> None:
    # $0.36/h until t=1000, then $0.72/h: 0.0001 $/s and 0.0002 $/s.
    periods = periods_from_changes([(1000.0, 0.72, "USD", "spot"), (400.0, 0.36, "USD", "spot")])
    assert [(p.start, p.end, p.per_hour) for p in periods] == [(-INF, 1000.0, 0.36), (1000.0, None, 0.72)]
    # run 900 → 1300: 100 s × 0.0001 + 300 s × 0.0002 = 0.01 + 0.06 = $0.07
    assert accrue(periods, 900, 1300).get() == pytest.approx(0.07, abs=1e-12)
    # The first known price also covers time before it was recorded (AWS returns the last change
    # before the start): 0 → 100 at $0.36/h = $0.01.
    assert accrue(periods, 0, 100).get() == pytest.approx(0.01)
    assert price_at(periods, 999.9).per_hour == 0.36 and price_at(periods, 1000).per_hour == 0.72


def test_same_price_repeated_is_one_period() -> None:
    periods = periods_from_changes([(0, 1.0, "USD", "a"), (10, 1.0, "USD", "b"), (20, 2.0, "USD", "c")])
    assert [(p.start, p.end, p.per_hour) for p in periods] == [(-INF, 20, 1.0), (20, None, 2.0)]


def test_share_scales_the_charge() -> None:
    # half of a $3.60/h host for 1000 s = $0.50
    assert accrue(FLAT, 0, 1000, share=0.5).get() == pytest.approx(0.5)


def test_totals_stay_per_currency_and_convert_only_with_a_rate() -> None:
    cny = [PricePeriod(-INF, None, 7.2, "CNY")]
    total = Money().merge(accrue(FLAT, 0, 1000)).merge(accrue(cny, 0, 1000))
    assert total.rounded() == {"CNY": 2.0, "USD": 1.0}  # $1.00 and ¥2.00, never added together
    assert convert(total, {}, "USD") is None  # no rate for CNY: no single figure
    # 1 CNY = 0.14 USD: 1.00 + 2.00 × 0.14 = $1.28
    assert convert(total, {"CNY": 0.14}, "USD") == pytest.approx(1.28)
    assert convert(Money(), {}, "USD") == 0.0
