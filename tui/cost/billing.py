"""Billing arithmetic, pure: per-second charges, provider minimums, price periods, currencies.

All times are epoch seconds on the *host's* clock (the journal's `t`); nothing here reads a clock.
Money is a float per currency; rounding to cents happens only when shown, so sums stay exact
to well under a cent over months of runtime.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

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
    # the provider's minimum billed duration under the settings in force then (None: not recorded,
    # the host's current provider decides): a provider changed later does not re-bill past runs
    minimum_s: float | None = None


def periods_from_changes(
    changes: Iterable[
        tuple[float, float | None, str, str] | tuple[float, float | None, str, str, float | None]
    ],
    open_start: bool = True,
) -> list[PricePeriod]:
    """(at, per_hour, currency, source) price changes, any order → back-to-back periods.

    A change to `per_hour` None (the price was removed) ends the period before it and opens none:
    from then on the price is unknown, until a later change sets one again.

    `open_start`: the first known price holds from the beginning of time. Right for a spot history
    that begins after the job began (AWS returns "the last price change before the start time");
    wrong for a price someone set at a known moment (the ledger's rows), which bills nothing before.
    """
    ordered = sorted(changes, key=lambda c: c[0])
    out: list[PricePeriod] = []
    for i, change in enumerate(ordered):
        at, per_hour, currency, source = change[:4]
        minimum = change[4] if len(change) > 4 else None
        last = out[-1] if out and out[-1].end is None else None
        if per_hour is None:
            if last is not None:
                out[-1] = replace(last, end=at)
            continue
        if last is not None and (last.per_hour, last.currency, last.minimum_s) == (
            per_hour,
            currency,
            minimum,
        ):
            continue  # the same price and terms again: one period, not two
        start = float("-inf") if i == 0 and open_start else at
        if last is not None:
            out[-1] = replace(last, end=at)
        out.append(PricePeriod(start, None, per_hour, currency, source, minimum))
    return out


def minimum_at(periods: Iterable[PricePeriod], t: float, default: float) -> float:
    """The minimum billed duration under the settings in force at `t` (a run is billed by the terms
    it started under); `default` where the period did not record one."""
    p = price_at(periods, t)
    return default if p is None or p.minimum_s is None else p.minimum_s


def spliced(before: Sequence[PricePeriod], after: Sequence[PricePeriod], at: float) -> list[PricePeriod]:
    """`before`'s periods up to `at`, then `after`'s from `at` (a spot history applies only from
    when the host became spot: what ran before keeps the price it ran at)."""
    out = [replace(p, end=at if p.end is None else min(p.end, at)) for p in before if p.start < at]
    out += [replace(p, start=max(p.start, at)) for p in after if p.end is None or p.end > at]
    return out


def covered(periods: Sequence[PricePeriod], start: float, end: float) -> bool:
    """Is a price known for every moment of [start, end)? (A gap: no price then, so cost unknown.)"""
    t = start
    for p in sorted(periods, key=lambda p: p.start):
        if t >= end:
            break
        if p.start > t:
            return False
        if p.end is None or p.end > t:
            t = end if p.end is None else max(t, p.end)
    return t >= end


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


def accrue(
    periods: Iterable[PricePeriod], start: float, end: float, share: float = 1.0, minimum: float = 0.0
) -> Money:
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
