"""Which live price applies to a host: a spot history from its provider, when credentials exist.

The providers are asked through `gpudeck cloud`'s own clients (tui/cloud/providers.py), so one
setting names each endpoint (config.toml `[cloud] aws_endpoint_url`, `aliyun_ecs_endpoint`; or the
environment: AWS_ENDPOINT_URL through boto3, GPUDECK_ALIYUN_ECS_ENDPOINT) and one path signs, retries
and words each call's failure; credentials come from the providers' chains. Without credentials
nothing is asked at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..cloud.model import CloudError
from ..settings import CloudSettings
from .billing import PricePeriod
from .settings import validate_price_settings
from .spot import (
    PriceLookupError,
    SpotPoint,
    aliyun_credentials,
    aliyun_spot_history,
    aws_credentials_available,
    aws_spot_history,
    periods,
    split_zone,
)

MAX_HISTORY_S = 90 * 86400  # AWS keeps 90 days of spot history


@dataclass
class SpotResult:
    periods: list[PricePeriod]
    quote: tuple[float, str, str] | None  # (per_hour, currency, source) now
    error: str | None = None


def spot_for_host(
    host_settings: Mapping[str, Any], start: float, end: float, cloud: CloudSettings
) -> SpotResult | None:
    """None when the host is not a spot host we can price live (no provider, no credentials)."""
    try:
        s = validate_price_settings(
            {k: host_settings.get(k) for k in ("market", "provider", "instance_type", "region")}
        )
    except ValueError:
        return None
    if s.get("market") != "spot" or not s.get("instance_type") or not s.get("region"):
        return None
    start = max(start, end - MAX_HISTORY_S)
    points: list[SpotPoint] = []
    try:
        if s.get("provider") == "aws" and aws_credentials_available():
            from ..cloud.aws import AwsProvider

            region = split_zone(s["region"])[0]
            ec2 = AwsProvider(region, cloud.aws_endpoint_url, cloud.aws_profile).ec2
            points = aws_spot_history(ec2, s["instance_type"], s["region"], start, end)
        elif s.get("provider") == "aliyun" and aliyun_credentials():
            from ..cloud.aliyun import AliyunProvider

            region, zone = _aliyun_zone(s["region"])
            provider = AliyunProvider(
                region, cloud.aliyun_ecs_endpoint, cloud.aliyun_cms_endpoint, cloud.aliyun_profile
            )
            points = aliyun_spot_history(provider.price_call, region, s["instance_type"], start, end, zone)
        else:
            return None
    except (PriceLookupError, CloudError) as exc:
        return SpotResult([], None, str(exc))
    if not points:
        return SpotResult([], None, f"no spot price history for {s['instance_type']} in {s['region']}")
    last = points[-1]
    return SpotResult(periods(points), (last.per_hour, last.currency, last.source))


def _aliyun_zone(region_or_zone: str) -> tuple[str, str | None]:
    """cn-hangzhou-h → (cn-hangzhou, cn-hangzhou-h): Aliyun zones add a one-letter suffix."""
    parts = region_or_zone.rsplit("-", 1)
    if len(parts) == 2 and len(parts[1]) == 1 and parts[1].isalpha():
        return parts[0], region_or_zone
    return split_zone(region_or_zone)[0], None


def on_demand_for_host(
    host_settings: Mapping[str, Any], cloud: CloudSettings
) -> tuple[float, str, str] | str | None:
    """A spot host's on-demand list price from its provider (Aliyun's DescribePrice; AWS has none
    live, the catalog has it): (per_hour, currency, source), the provider's error as a line, or
    None when there is no one to ask (not Aliyun, no credentials)."""
    try:
        s = validate_price_settings(
            {k: host_settings.get(k) for k in ("provider", "instance_type", "region")}
        )
    except ValueError:
        return None
    if (
        s.get("provider") != "aliyun"
        or not s.get("instance_type")
        or not s.get("region")
        or not aliyun_credentials()
    ):
        return None
    from ..cloud.aliyun import AliyunProvider
    from .spot import aliyun_price

    region, zone = _aliyun_zone(s["region"])
    try:
        provider = AliyunProvider(
            region, cloud.aliyun_ecs_endpoint, cloud.aliyun_cms_endpoint, cloud.aliyun_profile
        )
        return aliyun_price(provider.price_call, region, s["instance_type"], zone=zone)
    except (PriceLookupError, CloudError) as exc:
        return str(exc)
