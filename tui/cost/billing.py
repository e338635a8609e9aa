"""Billing arithmetic, pure: per-second charges, provider minimums, price periods, currencies.

All times are epoch seconds on the *host's* clock (the journal's `t`); nothing here reads a clock.
Money is a float per currency; rounding to cents happens only when shown, so sums stay exact
to well under a cent over months of runtime.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# Only minimums we have checked. AWS bills Linux On-Demand and Spot instances per second with a
# 60-second minimum (EC2 pricing page, "Per Second Billing"). Providers not listed: per second,
# no minimum, until someone verifies theirs.
MINIMUM_SECONDS: dict[str, float] = {"aws": 60.0}


def minimum_seconds(provider: str | None, os_name: str = "linux") -> float:
    if not provider or os_name.lower() != "linux":
        return 0.0
    return MINIMUM_SECONDS.get(provider.lower(), 0.0)


@dataclass(frozen=True)
class PricePeriod:
    """A price that held from `start` (inclusive) to `end` (exclusive; None: still holds)."""

    start: float
    end: float | None
    per_hour: float
    currency: str = "USD"
    source: str = "settings"


def periods_from_changes(changes: Iterable[tuple[float, float, str, str]]) -> list[PricePeriod]:
    """(at, per_hour, currency, source) price changes, any order → back-to-back periods.

    The first known price is taken to hold from the beginning of time: a spot history that begins
    after the job began still prices the job's first minutes with the earliest price we know,
    which is what AWS's history means (it returns "the last price change before the start time").
    """
    ordered = sorted(changes, key=lambda c: c[0])
    out: list[PricePeriod] = []
    for i, (at, per_hour, currency, source) in enumerate(ordered):
        if out and out[-1].per_hour == per_hour and out[-1].currency == currency:
            continue  # the same price again: one period, not two
        start = float("-inf") if i == 0 else at
        if out:
            out[-1] = PricePeriod(out[-1].start, at, out[-1].per_hour, out[-1].currency, out[-1].source)
        out.append(PricePeriod(start, None, per_hour, currency, source))
    return out


def price_at(periods: Iterable[PricePeriod], t: float) -> PricePeriod | None:
    for p in periods:
        if p.start <= t and (p.end is None or t < p.end):
            return p
    return None


@dataclass
class Money:
    """Totals per currency: never summed across currencies without an explicit fx table."""

    amounts: dict[str, float] = field(default_factory=dict)

    def add(self, currency: str, amount: float) -> Money:
        self.amounts[currency] = self.amounts.get(currency, 0.0) + amount
        return self

    def merge(self, other: Money) -> Money:
        for cur, amount in other.amounts.items():
            self.add(cur, amount)
        return self

    def scaled(self, factor: float) -> Money:
        return Money({c: a * factor for c, a in self.amounts.items()})

    def get(self, currency: str = "USD") -> float:
        return self.amounts.get(currency, 0.0)

    def __bool__(self) -> bool:
        return any(self.amounts.values())

    def rounded(self, places: int = 6) -> dict[str, float]:
        return {c: round(a, places) for c, a in sorted(self.amounts.items())}


def accrue(periods: Iterable[PricePeriod], start: float, end: float, share: float = 1.0,
           minimum: float = 0.0) -> Money:
    """Cost of [start, end) × share under the price periods, per second.

    `minimum` is the provider's minimum billed duration, applied to the interval as a whole (an
    instance that ran 20 s on AWS is billed 60 s); the extra seconds are priced at the price in
    effect when they would have run.
    """
    if end - start < minimum:
        end = start + minimum
    total = Money()
    if end <= start:
        return total
    for p in periods:
        lo = max(start, p.start)
        hi = end if p.end is None else min(end, p.end)
        if hi > lo:
            total.add(p.currency, (hi - lo) * p.per_hour / 3600.0 * share)
    return total


def convert(money: Money, fx: Mapping[str, float], to: str = "USD") -> float | None:
    """One figure in `to`, with fx[c] = how many `to` one unit of c is worth; None if a rate lacks."""
    total = 0.0
    for cur, amount in money.amounts.items():
        if cur == to:
            total += amount
        elif cur in fx:
            total += amount * float(fx[cur])
        elif amount:
            return None
    return total
