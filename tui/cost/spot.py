"""Live prices from the providers: AWS spot history (boto3) and Aliyun ECS (core SDK CommonRequest).

Blocking network IO: call from a worker thread or the CLI, never from the UI thread. Every call
takes an explicit endpoint so tests (and air-gapped users) point it at a local server; nothing
here guesses a price — an empty answer is None/[] and the caller shows `unknown`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .billing import PricePeriod, periods_from_changes

if TYPE_CHECKING:
    from ..cloud.aliyun_auth import AliyunCredentials

AWS_PRODUCT = "Linux/UNIX"  # the scope; Windows and SUSE bill differently
ALIYUN_ECS_VERSION = "2014-05-26"


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


def aws_client(region: str, endpoint_url: str | None = None) -> Any:
    import boto3
    from botocore.config import Config

    # Few, quick retries: a price is shown next to "unknown" rather than freezing a command.
    config = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2, "mode": "standard"})
    return boto3.client("ec2", region_name=region, endpoint_url=endpoint_url, config=config)


def aws_spot_history(instance_type: str, zone_or_region: str, start: float, end: float | None = None,
                     client: Any = None, endpoint_url: str | None = None) -> list[SpotPoint]:
    """Spot prices for one zone (the zone given, else the zone of the newest record), oldest first.

    AWS also returns the last change *before* `start`, so the first point prices the start.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    region, zone = split_zone(zone_or_region)
    ec2 = client or aws_client(region, endpoint_url)
    args: dict[str, Any] = {"InstanceTypes": [instance_type], "ProductDescriptions": [AWS_PRODUCT],
                            "StartTime": dt.datetime.fromtimestamp(start, dt.timezone.utc)}
    if end is not None:
        args["EndTime"] = dt.datetime.fromtimestamp(end, dt.timezone.utc)
    if zone:
        args["AvailabilityZone"] = zone
    rows: list[dict[str, Any]] = []
    try:
        for page in ec2.get_paginator("describe_spot_price_history").paginate(**args):
            rows.extend(page.get("SpotPriceHistory") or [])
    except (BotoCoreError, ClientError) as exc:
        raise PriceLookupError(f"aws describe_spot_price_history {instance_type} {zone_or_region}: {exc}") from None
    rows = [r for r in rows if r.get("InstanceType") == instance_type and r.get("SpotPrice")]
    if not rows:
        return []
    chosen = zone or max(rows, key=lambda r: _epoch(r["Timestamp"]))["AvailabilityZone"]
    source = f"aws describe_spot_price_history {chosen} {AWS_PRODUCT}"
    points = [SpotPoint(_epoch(r["Timestamp"]), float(r["SpotPrice"]), "USD", r.get("AvailabilityZone") or chosen, source)
              for r in rows if r.get("AvailabilityZone", chosen) == chosen]
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


def aliyun_client(region: str, credentials: tuple[str, str] | AliyunCredentials | None = None) -> Any:
    from aliyunsdkcore.auth.credentials import AccessKeyCredential, StsTokenCredential
    from aliyunsdkcore.client import AcsClient

    creds = credentials or aliyun_credentials()
    if creds is None:
        raise PriceLookupError("aliyun: no credentials (ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET, ALIYUN_ACCESS_KEY_ID/_SECRET, "
                               "or `aliyun configure`)")
    key, secret, token = (creds[0], creds[1], None) if isinstance(creds, tuple) else (creds.key_id, creds.secret, creds.token)
    credential = StsTokenCredential(key, secret, token) if token else AccessKeyCredential(key, secret)
    # auto_retry off: the SDK's retries would multiply our own timeouts.
    return AcsClient(region_id=region, credential=credential, auto_retry=False, timeout=10, connect_timeout=5)


def aliyun_ecs_endpoint(endpoint: str | None, protocol: str) -> tuple[str | None, str]:
    """(domain, protocol): GPUDECK_ALIYUN_ECS_ENDPOINT (a URL, as `gpudeck cloud` reads it) wins over
    `[cost.aliyun] endpoint`/`protocol`; None: the region's public endpoint."""
    url = os.environ.get("GPUDECK_ALIYUN_ECS_ENDPOINT")
    if url:
        parts = urlsplit(url if "://" in url else f"https://{url}")
        if parts.scheme in ("http", "https") and parts.netloc:
            return parts.netloc, parts.scheme
        raise PriceLookupError(f"aliyun: GPUDECK_ALIYUN_ECS_ENDPOINT {url!r}: expected a URL such as http://127.0.0.1:8080")
    return endpoint, protocol


def _aliyun_call(client: Any, action: str, params: dict[str, Any], endpoint: str, protocol: str) -> dict[str, Any]:
    from aliyunsdkcore.acs_exception.exceptions import ClientException, ServerException
    from aliyunsdkcore.request import CommonRequest

    req = CommonRequest()
    req.set_accept_format("json")
    # Always a domain: without one the SDK looks endpoints up on the internet.
    req.set_domain(endpoint)
    req.set_protocol_type(protocol)
    req.set_method("POST")
    req.set_version(ALIYUN_ECS_VERSION)
    req.set_action_name(action)
    for key, value in params.items():
        if value is not None:
            req.add_query_param(key, value)
    try:
        raw = client.do_action_with_exception(req)
    except ServerException as exc:
        raise PriceLookupError(f"aliyun {action}: {exc.get_error_code()}: {exc.get_error_msg()}") from None
    except ClientException as exc:
        raise PriceLookupError(f"aliyun {action}: {exc.get_error_code()}: {exc.get_error_msg()}") from None
    try:
        return json.loads(raw)
    except ValueError:
        raise PriceLookupError(f"aliyun {action}: the answer is not JSON") from None


def aliyun_endpoint(region: str) -> str:
    return f"ecs.{region}.aliyuncs.com"


def aliyun_spot_history(client: Any, region: str, instance_type: str, start: float, end: float | None = None,
                        zone: str | None = None, endpoint: str | None = None, protocol: str = "https") -> list[SpotPoint]:
    """DescribeSpotPriceHistory (Linux, VPC), one zone (the given, else the newest record's)."""
    points: list[SpotPoint] = []
    offset = 0
    while True:
        answer = _aliyun_call(client, "DescribeSpotPriceHistory", {
            "RegionId": region, "InstanceType": instance_type, "NetworkType": "vpc", "OSType": "linux",
            "ZoneId": zone, "StartTime": _iso(start), "EndTime": _iso(end) if end else None,
            "Offset": offset or None,
        }, endpoint or aliyun_endpoint(region), protocol)
        currency = str(answer.get("Currency") or "CNY")
        rows = ((answer.get("SpotPrices") or {}).get("SpotPriceType")) or []
        for r in rows:
            if r.get("InstanceType", instance_type) != instance_type or r.get("SpotPrice") is None:
                continue
            points.append(SpotPoint(_epoch(r["Timestamp"]), float(r["SpotPrice"]), currency, str(r.get("ZoneId") or ""),
                                    f"aliyun DescribeSpotPriceHistory {r.get('ZoneId') or region}"))
        next_offset = int(answer.get("NextOffset") or 0)
        if not rows or next_offset <= offset:
            break
        offset = next_offset
    if not points:
        return []
    chosen = zone or max(points, key=lambda p: p.t).zone
    return sorted((p for p in points if p.zone == chosen), key=lambda p: p.t)


def aliyun_price(client: Any, region: str, instance_type: str, spot: bool = False, zone: str | None = None,
                 endpoint: str | None = None, protocol: str = "https") -> tuple[float, str, str] | None:
    """DescribePrice for one hour of the instance type: (trade price, currency, source) or None."""
    answer = _aliyun_call(client, "DescribePrice", {
        "RegionId": region, "ResourceType": "instance", "InstanceType": instance_type, "PriceUnit": "Hour",
        "Period": 1, "InstanceNetworkType": "vpc", "ZoneId": zone,
        "SpotStrategy": "SpotAsPriceGo" if spot else None,
    }, endpoint or aliyun_endpoint(region), protocol)
    price = ((answer.get("PriceInfo") or {}).get("Price")) or {}
    value = price.get("TradePrice", price.get("OriginalPrice"))
    if value is None:
        return None
    market = "spot" if spot else "pay-as-you-go"
    return float(value), str(price.get("Currency") or "CNY"), f"aliyun DescribePrice {region} {market}"
