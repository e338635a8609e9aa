"""The next larger instance type of the same family, from the price catalog, and what it costs more."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..cost.catalog import CatalogEntry


def family(provider: str, instance_type: str) -> str:
    """aws g5.xlarge → g5; aliyun ecs.gn7i-c8g1.2xlarge → gn7i; tencent GN10Xp.2XLARGE40 → GN10Xp;
    azure Standard_ND96asr_v4 → Standard_ND*asr_v4 (the size is the number)."""
    if provider == "azure":
        return re.sub(r"(?<=[A-Za-z])\d+", "*", instance_type, count=1)
    name = instance_type.removeprefix("ecs.")
    return re.split(r"[.\-]", name, maxsplit=1)[0]


def _size(e: CatalogEntry) -> tuple[float, ...]:
    return (e.gpus or 0, e.gpu_memory_gb or 0, e.vcpus or 0, e.memory_gib or 0)


@dataclass(frozen=True)
class Proposal:
    current: CatalogEntry | None
    next: CatalogEntry | None
    family: str
    price_now: float | None  # USD per hour, on the host's market
    price_next: float | None
    market: str  # "spot" (prices are the catalog's spot low) or "on-demand"

    @property
    def difference(self) -> float | None:
        if self.price_now is None or self.price_next is None:
            return None
        return self.price_next - self.price_now


def _price(e: CatalogEntry | None, market: str) -> float | None:
    if e is None:
        return None
    return e.spot_usd_per_hour_low if market == "spot" else e.on_demand_usd_per_hour


def next_larger(
    catalog: Iterable[CatalogEntry], provider: str, instance_type: str, region: str | None, market: str | None
) -> Proposal:
    provider = provider.lower()
    fam = family(provider, instance_type)
    same = [e for e in catalog if e.provider == provider and family(provider, e.instance_type) == fam]
    here = [
        e for e in same if region is None or e.region in (None, region)
    ] or same  # a list price elsewhere beats none
    # one row per type: the host's region's where it has one (a price), else the region-less sizes
    best: dict[str, CatalogEntry] = {}
    for e in here:
        if e.instance_type not in best or (region is not None and e.region == region):
            best[e.instance_type] = e
    here = list(best.values())
    current = next((e for e in here if e.instance_type == instance_type), None)
    mkt = "spot" if market == "spot" else "on-demand"
    if current is None:
        return Proposal(None, None, fam, None, None, mkt)
    larger = sorted(
        (e for e in here if _size(e) > _size(current) and e.instance_type != instance_type), key=_size
    )
    nxt = larger[0] if larger else None
    return Proposal(current, nxt, fam, _price(current, mkt), _price(nxt, mkt), mkt)
