"""The shipped price catalog: sourced list prices per instance type, `unknown` where none was found.

`prices.csv` (package data) is built from a sourced price table (a row per instance type, each
with its source and date) by `build_rows`: every cell left empty there reads `unknown` here, and
`checked` is the date the catalog was built (so an entry whose price is unknown still says when
someone last looked).
Prices are never invented: a lookup that finds `unknown` returns None and the caller says so.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

UNKNOWN = "unknown"
COLUMNS = (
    "provider",
    "instance_type",
    "region",
    "gpus",
    "gpu_model",
    "gpu_memory_gb",
    "vcpus",
    "memory_gib",
    "on_demand_usd_per_hour",
    "spot_usd_per_hour_low",
    "spot_usd_per_hour_high",
    "source",
    "as_of",
    "checked",
)
PRICE_COLUMNS = ("on_demand_usd_per_hour", "spot_usd_per_hour_low", "spot_usd_per_hour_high")


class CatalogError(ValueError):
    """The shipped catalog breaks its own rules (a test runs validate() on it)."""


@dataclass(frozen=True)
class CatalogEntry:
    provider: str
    instance_type: str
    region: str | None  # None: the figure is not tied to a region (or the region is unknown)
    gpus: int | None
    gpu_model: str | None
    gpu_memory_gb: float | None
    vcpus: int | None
    memory_gib: float | None
    on_demand_usd_per_hour: float | None  # None: unknown, never a guess
    spot_usd_per_hour_low: float | None
    spot_usd_per_hour_high: float | None
    source: str
    as_of: str | None
    checked: str

    def to_json(self) -> dict[str, Any]:
        # One type per field in every --json: a number, or null when unknown (never the word, never 0).
        return asdict(self)


def _opt(text: str) -> str | None:
    text = text.strip()
    return None if not text or text == UNKNOWN else text


def _num(text: str, kind: type = float) -> Any:
    value = _opt(text)
    return None if value is None else kind(value)


def parse(text: str) -> list[CatalogEntry]:
    rows = list(csv.DictReader(io.StringIO(text)))
    if rows and tuple(rows[0].keys()) != COLUMNS:
        raise CatalogError(f"catalog columns {tuple(rows[0].keys())} != {COLUMNS}")
    return [
        CatalogEntry(
            provider=r["provider"].strip(),
            instance_type=r["instance_type"].strip(),
            region=_opt(r["region"]),
            gpus=_num(r["gpus"], int),
            gpu_model=_opt(r["gpu_model"]),
            gpu_memory_gb=_num(r["gpu_memory_gb"]),
            vcpus=_num(r["vcpus"], int),
            memory_gib=_num(r["memory_gib"]),
            on_demand_usd_per_hour=_num(r["on_demand_usd_per_hour"]),
            spot_usd_per_hour_low=_num(r["spot_usd_per_hour_low"]),
            spot_usd_per_hour_high=_num(r["spot_usd_per_hour_high"]),
            source=r["source"].strip(),
            as_of=_opt(r["as_of"]),
            checked=r["checked"].strip(),
        )
        for r in rows
    ]


def shipped_text() -> str:
    return resources.files(__package__).joinpath("prices.csv").read_text(encoding="utf-8")


_cache: list[CatalogEntry] | None = None


def entries() -> list[CatalogEntry]:
    global _cache
    if _cache is None:
        _cache = parse(shipped_text())
    return list(_cache)


def validate(items: Iterable[CatalogEntry]) -> list[CatalogEntry]:
    """Every entry has a source and a date; no negative price; spot low <= high when both known."""
    out = list(items)
    seen: set[tuple[str, str, str | None]] = set()
    for e in out:
        where = f"{e.provider}/{e.instance_type}"
        if not e.source:
            raise CatalogError(f"{where}: no source")
        if not e.checked:
            raise CatalogError(f"{where}: no date")
        for col in PRICE_COLUMNS:
            value = getattr(e, col)
            if value is not None and value < 0:
                raise CatalogError(f"{where}: {col} is negative")
        if e.on_demand_usd_per_hour is not None and not e.as_of:
            raise CatalogError(f"{where}: a price without the date it was true")
        lo, hi = e.spot_usd_per_hour_low, e.spot_usd_per_hour_high
        if lo is not None and hi is not None and lo > hi:
            raise CatalogError(f"{where}: spot low {lo} > high {hi}")
        key = (e.provider, e.instance_type, e.region)
        if key in seen:
            raise CatalogError(f"{where}: listed twice")
        seen.add(key)
    return out


def find(provider: str | None, instance_type: str | None, region: str | None = None) -> CatalogEntry | None:
    """The entry for this instance type; a region-specific row wins over a region-less one.

    A row for another region is still returned when it is the only one, because a list price is
    better than nothing for display; callers report the entry's own region next to the figure.
    """
    if not provider or not instance_type:
        return None
    matches = [e for e in entries() if e.provider == provider.lower() and e.instance_type == instance_type]
    if not matches:
        return None
    exact = [e for e in matches if region and e.region == region]
    regionless = [e for e in matches if e.region is None]
    return (exact or regionless or matches)[0]


def build_rows(source_text: str, checked: str) -> str:
    """The sourced price table → the shipped CSV: empty cells become `unknown`, a `checked` date is added."""
    rows = list(csv.DictReader(io.StringIO(source_text)))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        fixed = {k: (v.strip() if v and v.strip() else UNKNOWN) for k, v in row.items() if k in COLUMNS}
        fixed["checked"] = checked
        writer.writerow(fixed)
    return out.getvalue()
