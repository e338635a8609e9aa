"""A host's price settings (hosts.toml fields) and the price that follows from them.

hosts.toml belongs to the hosts feature; cost reads only these keys from a host's table:

    [hosts.gpu1]
    price_per_hour = 2.5        # what this host costs you, per hour, in `currency`
    currency = "USD"
    market = "on-demand"        # or "spot"
    provider = "aws"            # aws | azure | aliyun | tencent | other
    instance_type = "g5.xlarge"
    region = "us-east-1"        # for spot: an availability zone (us-east-1a) narrows it
    instance_id = "i-0abc…"
    on_demand_price = 1.006     # spot: the type's on-demand price (`cost`'s savings; else the catalog's)
    idle_stop = "30m@10%"       # default idle stop for jobs launched here ("off" for none)
    price_per_gpu_hour = 1.2    # a Slurm host: its allocations are billed per GPU-hour ...
    price_per_node_hour = 8     # ... or per node-hour (not the login node's uptime)

`validate_price_settings` is what `gpudeck hosts set NAME key=value…` calls before writing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..regions import region_of
from . import catalog
from .idle import CostRuleError, parse_idle_stop

RATE_KEYS = ("price_per_gpu_hour", "price_per_node_hour")  # a Slurm host's charge rate (issue 30)
PRICE_KEYS = (
    "price_per_hour",
    *RATE_KEYS,
    "currency",
    "market",
    "provider",
    "instance_type",
    "region",
    "instance_id",
)
# idle_stop: the host's default rule for its jobs, e.g. "30m@10%"; instance_idle_stop: stop the cloud
# instance itself (`gpudeck cloud enforce`, only instances tagged gpudeck-managed=true)
# on_demand_price: a spot host's type on demand, per hour (what `cost` counts its savings against)
COST_KEYS = (*PRICE_KEYS, "idle_stop", "instance_idle_stop", "on_demand_price")
MARKETS = ("on-demand", "spot")
PROVIDERS = ("aws", "azure", "aliyun", "tencent", "other")
_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")


class PriceSettingsError(ValueError):
    """One line naming the key and what is wrong with its value."""


def validate_price_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """Checked, normalised price settings from `key=value` strings or TOML values.

    Unknown keys are not ours and pass through untouched; an empty string removes a key
    (returned as None so the caller deletes it). Raises PriceSettingsError with one line.
    """
    out: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in COST_KEYS:
            out[key] = raw
            continue
        if raw is None or (isinstance(raw, str) and raw.strip() == ""):
            out[key] = None
            continue
        out[key] = _check(key, raw)
    return out


def _check(key: str, raw: Any) -> Any:
    if key in ("idle_stop", "instance_idle_stop"):
        try:
            parse_idle_stop(str(raw))
        except CostRuleError as exc:
            raise PriceSettingsError(str(exc).replace("--idle-stop", key, 1)) from None
        return str(raw).strip().lower()
    if key in ("price_per_hour", *RATE_KEYS, "on_demand_price"):
        try:
            value = float(raw) if not isinstance(raw, bool) else math.nan
        except (TypeError, ValueError):
            raise PriceSettingsError(f"{key}: expected a number, got {raw!r}") from None
        if not math.isfinite(value) or value < 0:
            raise PriceSettingsError(f"{key}: expected a number >= 0, got {raw!r}")
        return value
    text = str(raw).strip()
    if key == "currency":
        if not re.fullmatch(r"[A-Za-z]{3}", text):
            raise PriceSettingsError(f"currency: expected a 3-letter code such as USD or CNY, got {raw!r}")
        return text.upper()
    if key == "market":
        text = text.lower().replace("_", "-").replace("ondemand", "on-demand")
        if text not in MARKETS:
            raise PriceSettingsError(f"market: expected on-demand or spot, got {raw!r}")
        return text
    if key == "provider":
        text = text.lower()
        if text not in PROVIDERS:
            raise PriceSettingsError(f"provider: expected one of {', '.join(PROVIDERS)}, got {raw!r}")
        return text
    if not _TOKEN.match(text):
        raise PriceSettingsError(f"{key}: {raw!r} is not a valid {key.replace('_', ' ')}")
    return text


@dataclass(frozen=True)
class HostPrice:
    """The price that applies to a host now, and where it came from (for `gpudeck prices`)."""

    per_hour: float | None  # None: unknown
    currency: str
    market: str
    source: str
    provider: str | None = None
    instance_type: str | None = None
    region: str | None = None
    instance_id: str | None = None
    per: str = "host"  # "gpu" / "node": a Slurm host's rate, billed per allocated GPU- or node-hour

    @property
    def known(self) -> bool:
        return self.per_hour is not None

    def spec_price(self, share: float) -> dict[str, Any] | None:
        """The `price` object `gpudeck run` puts into a job spec (the supervisor's budget uses it)."""
        if self.per_hour is None:
            return None
        return {
            "per_hour": self.per_hour,
            "currency": self.currency,
            "share": max(1e-6, min(1.0, share)),
            "market": self.market,
            "source": self.source,
        }


def host_price(
    host_settings: Mapping[str, Any], spot_quote: tuple[float, str, str] | None = None
) -> HostPrice:
    """The host's price: the user's `price_per_hour` wins, then a live spot quote, then the catalog.

    `host_settings` is the host's hosts.toml table (for the hosts feature's HostEntry: `.extra`).
    A value that fails validation is ignored here (the hosts command refuses to write one).
    """
    try:
        s = validate_price_settings({k: host_settings.get(k) for k in PRICE_KEYS})
    except PriceSettingsError:
        s = {k: None for k in PRICE_KEYS}
    market = s.get("market") or "on-demand"
    common: dict[str, Any] = {
        "provider": s.get("provider"),
        "instance_type": s.get("instance_type"),
        "region": s.get("region"),
        "instance_id": s.get("instance_id"),
    }
    for key, per in (("price_per_gpu_hour", "gpu"), ("price_per_node_hour", "node")):
        if s.get(key) is not None and s.get("price_per_hour") is None:
            return HostPrice(
                s[key], s.get("currency") or "USD", market, f"hosts.toml {key}", **common, per=per
            )
    if s.get("price_per_hour") is not None:
        return HostPrice(
            s["price_per_hour"], s.get("currency") or "USD", market, "hosts.toml price_per_hour", **common
        )
    if market == "spot" and spot_quote is not None:
        per_hour, currency, source = spot_quote
        return HostPrice(per_hour, currency, market, source, **common)
    region = region_of(s.get("region"), s.get("provider"))
    entry = catalog.find(s.get("provider"), s.get("instance_type"), region)
    if entry is not None and market == "on-demand" and entry.on_demand_usd_per_hour is not None:
        where = f" {entry.region}" if entry.region else ""
        source = f"catalog {entry.provider} {entry.instance_type}{where} on-demand ({entry.source}; as of {entry.as_of})"
        return HostPrice(entry.on_demand_usd_per_hour, "USD", market, source, **common)
    why = (
        "no price_per_hour set"
        if entry is None
        else f"catalog has no {market} price for {entry.instance_type}"
    )
    return HostPrice(None, s.get("currency") or "USD", market, f"unknown ({why})", **common)
