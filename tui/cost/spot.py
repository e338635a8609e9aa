"""Live prices from the providers: AWS spot history (boto3) and Aliyun ECS (core SDK CommonRequest).

Blocking network IO: call from a worker thread or the CLI, never from the UI thread. The calls go
through the providers' own clients (tui/cloud: one client, one endpoint setting, one retry and
error mapping per provider); nothing here guesses a price — an empty answer is None/[] and the
caller shows `unknown`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .billing import PricePeriod, periods_from_changes

if TYPE_CHECKING:
    from ..cloud.aliyun_auth import AliyunCredentials

AWS_PRODUCT = "Linux/UNIX"  # the scope; Windows and SUSE bill differently
# An ECS action with its parameters → the answer; raises PriceLookupError. The one Aliyun request
# path (tui/cloud/aliyun.py AliyunProvider.price_call: endpoint, signing, retries, error mapping).
EcsCall = Callable[[str, dict[str, Any]], dict[str, Any]]


class PriceLookupError(Exception):
    """A provider refused or could not be reached; one line saying which and why."""


@dataclass(frozen=True)
class SpotPoint:
    t: float  # epoch seconds (UTC): the price holds from here until the next point
    per_hour: float
    currency: str
    zone: str
    source: str


def periods(points: list[SpotPoint]) -> list[PricePeriod]:
    return periods_from_changes((p.t, p.per_hour, p.currency, p.source) for p in points)


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(value: Any) -> float:
    if isinstance(value, dt.datetime):
        return value.timestamp() if value.tzinfo else value.replace(tzinfo=dt.timezone.utc).timestamp()
    text = str(value).replace("Z", "+00:00")
    parsed = dt.datetime.fromisoformat(text)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)).timestamp()


def split_zone(zone_or_region: str) -> tuple[str, str | None]:
    """us-east-1a → (us-east-1, us-east-1a); us-east-1 → (us-east-1, None)."""
    if re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d+[a-z]", zone_or_region):
        return zone_or_region[:-1], zone_or_region
    return zone_or_region, None


# -- AWS ----------------------------------------------------------------------------------------


def aws_credentials_available() -> bool:
    import boto3

    return boto3.session.Session().get_credentials() is not None


def aws_spot_history(
    ec2: Any, instance_type: str, zone_or_region: str, start: float, end: float | None = None
) -> list[SpotPoint]:
    """Spot prices for one zone (the zone given, else the zone of the newest record), oldest first.

    AWS also returns the last change *before* `start`, so the first point prices the start.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    zone = split_zone(zone_or_region)[1]
    args: dict[str, Any] = {
        "InstanceTypes": [instance_type],
        "ProductDescriptions": [AWS_PRODUCT],
        "StartTime": dt.datetime.fromtimestamp(start, dt.timezone.utc),
    }
    if end is not None:
        args["EndTime"] = dt.datetime.fromtimestamp(end, dt.timezone.utc)
    if zone:
        args["AvailabilityZone"] = zone
    rows: list[dict[str, Any]] = []
    try:
        for page in ec2.get_paginator("describe_spot_price_history").paginate(**args):
            rows.extend(page.get("SpotPriceHistory") or [])
    except (BotoCoreError, ClientError) as exc:
        raise PriceLookupError(
            f"aws describe_spot_price_history {instance_type} {zone_or_region}: {exc}"
        ) from None
    rows = [r for r in rows if r.get("InstanceType") == instance_type and r.get("SpotPrice")]
    if not rows:
        return []
    chosen = zone or max(rows, key=lambda r: _epoch(r["Timestamp"]))["AvailabilityZone"]
    source = f"aws describe_spot_price_history {chosen} {AWS_PRODUCT}"
    points = [
        SpotPoint(
            _epoch(r["Timestamp"]), float(r["SpotPrice"]), "USD", r.get("AvailabilityZone") or chosen, source
        )
        for r in rows
        if r.get("AvailabilityZone", chosen) == chosen
    ]
    return sorted(points, key=lambda p: p.t)


# -- Aliyun -------------------------------------------------------------------------------------


def aliyun_credentials() -> AliyunCredentials | None:
    """The same chain as `gpudeck cloud` (tui/cloud/aliyun_auth.py): ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET,
    ALIYUN_ACCESS_KEY_ID/_SECRET, then ~/.aliyun/config.json; None when there are none."""
    from ..cloud.aliyun_auth import credentials
    from ..cloud.model import CloudError

    try:
        return credentials()
    except CloudError:
        return None


def aliyun_spot_history(
    ecs: EcsCall,
    region: str,
    instance_type: str,
    start: float,
    end: float | None = None,
    zone: str | None = None,
) -> list[SpotPoint]:
    """DescribeSpotPriceHistory (Linux, VPC), one zone (the given, else the newest record's)."""
    points: list[SpotPoint] = []
    offset = 0
    while True:
        answer = ecs(
            "DescribeSpotPriceHistory",
            {
                "RegionId": region,
                "InstanceType": instance_type,
                "NetworkType": "vpc",
                "OSType": "linux",
                "ZoneId": zone,
                "StartTime": _iso(start),
                "EndTime": _iso(end) if end else None,
                "Offset": offset or None,
            },
        )
        currency = str(answer.get("Currency") or "CNY")
        rows = ((answer.get("SpotPrices") or {}).get("SpotPriceType")) or []
        for r in rows:
            if r.get("InstanceType", instance_type) != instance_type or r.get("SpotPrice") is None:
                continue
            points.append(
                SpotPoint(
                    _epoch(r["Timestamp"]),
                    float(r["SpotPrice"]),
                    currency,
                    str(r.get("ZoneId") or ""),
                    f"aliyun DescribeSpotPriceHistory {r.get('ZoneId') or region}",
                )
            )
        next_offset = int(answer.get("NextOffset") or 0)
        if not rows or next_offset <= offset:
            break
        offset = next_offset
    if not points:
        return []
    chosen = zone or max(points, key=lambda p: p.t).zone
    return sorted((p for p in points if p.zone == chosen), key=lambda p: p.t)


def aliyun_price(
    ecs: EcsCall, region: str, instance_type: str, spot: bool = False, zone: str | None = None
) -> tuple[float, str, str] | None:
    """DescribePrice for one hour of the instance type: (trade price, currency, source) or None."""
    answer = ecs(
        "DescribePrice",
        {
            "RegionId": region,
            "ResourceType": "instance",
            "InstanceType": instance_type,
            "PriceUnit": "Hour",
            "Period": 1,
            "InstanceNetworkType": "vpc",
            "ZoneId": zone,
            "SpotStrategy": "SpotAsPriceGo" if spot else None,
        },
    )
    price = ((answer.get("PriceInfo") or {}).get("Price")) or {}
    value = price.get("TradePrice", price.get("OriginalPrice"))
    if value is None:
        return None
    market = "spot" if spot else "pay-as-you-go"
    return float(value), str(price.get("Currency") or "CNY"), f"aliyun DescribePrice {region} {market}"
