"""Money over several instances: one total per currency, never CNY and USD added as if one, or —
where the user set a rate ([cost] fx in config.toml) for every currency in it — one figure in the
user's currency, with the rates it used said beside it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..format import money


def per_currency(amounts: Iterable[tuple[float | None, str]]) -> dict[str, float]:
    """(amount, currency) pairs → the sum in each currency (unknown amounts add nothing)."""
    out: dict[str, float] = {}
    for amount, currency in amounts:
        if amount is not None:
            out[currency] = out.get(currency, 0.0) + amount
    return out


def total_text(sums: Mapping[str, float], fx: Mapping[str, float], to: str, suffix: str = "") -> str:
    """`$3.00/h + CNY 20.00/h`; or, with a rate for each other currency, `$5.80/h (CNY at 0.14 USD)`."""
    if not sums:
        return money(0.0, to, suffix)
    others = sorted(c for c in sums if c != to)
    if others and all(c in fx for c in others):
        value = sum(amount * (1.0 if c == to else float(fx[c])) for c, amount in sums.items())
        rates = ", ".join(f"{c} at {float(fx[c]):g} {to}" for c in others)
        return f"{money(value, to, suffix)} ({rates}, [cost] fx)"
    return " + ".join(money(sums[c], c, suffix) for c in sorted(sums, key=lambda c: (c != to, c)))
