"""An instance's price per hour and where it came from: the provider's own figure when it has one
(actual spot price history for its zone; Aliyun's DescribePrice), else the shipped catalog's list
price, else unknown — never a guess. A spot instance is never priced at the on-demand list price."""

from __future__ import annotations

from dataclasses import dataclass

from ..cost import catalog
from .model import CloudError, Instance, Provider


@dataclass(frozen=True)
class InstancePrice:
    per_hour: float | None
    currency: str
    source: str

    def accrued(self, since: float | None, now: float) -> float | None:
        """What the instance has cost since it (last) started, at this price."""
        if self.per_hour is None or since is None:
            return None
        return self.per_hour * max(0.0, now - since) / 3600.0


def price_for(provider: Provider, instance: Instance, now: float) -> InstancePrice:
    try:
        if instance.lifecycle == "spot":
            live = provider.spot_price(instance, now - 86400, now)
        else:
            live = provider.on_demand_price(instance)
    except CloudError as exc:
        live, problem = None, str(exc)
    else:
        problem = ""
    if live is not None:
        return InstancePrice(live[0], live[1], live[2])
    entry = catalog.find(instance.provider, instance.type, instance.region)
    if instance.lifecycle == "on-demand" and entry is not None and entry.on_demand_usd_per_hour is not None:
        return InstancePrice(
            entry.on_demand_usd_per_hour,
            "USD",
            f"catalog {entry.region or '-'} on-demand ({entry.as_of or '?'})",
        )
    why = (
        f"unknown: {problem}"
        if problem
        else "unknown: not in the catalog" + (" nor in spot history" if instance.lifecycle == "spot" else "")
    )
    return InstancePrice(None, "USD", why)
