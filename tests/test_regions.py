"""One zone → region rule (tui/regions.py) for prices, spot quotes and managed moves; there were
three, and the managed one read Aliyun's international zones (ap-southeast-1a) as regions."""

from __future__ import annotations

import pytest

from tui.managed.candidates import parse_candidate
from tui.regions import region_of


@pytest.mark.parametrize(
    ("zone", "provider", "region"),
    [
        ("us-east-1a", "aws", "us-east-1"),
        ("ap-northeast-1c", "aws", "ap-northeast-1"),
        ("us-gov-west-1a", "aws", "us-gov-west-1"),
        ("us-west-2-lax-1a", "aws", "us-west-2-lax-1a"),  # a Local Zone: no region of its own spelling
        ("us-east-1", "aws", "us-east-1"),  # already a region
        ("us-east-1a", None, "us-east-1"),  # a host whose provider is not said: AWS's spelling
        ("cn-hangzhou-i", "aliyun", "cn-hangzhou"),
        ("cn-beijing-a", "aliyun", "cn-beijing"),
        ("ap-southeast-1a", "aliyun", "ap-southeast-1"),
        ("cn-hangzhou", "aliyun", "cn-hangzhou"),
        ("cn-hangzhou-i", "aws", "cn-hangzhou-i"),  # not an AWS zone
        ("zone-x", "other", "zone-x"),
    ],
)
def test_a_zone_is_read_as_its_providers_region(zone: str, provider: str | None, region: str) -> None:
    assert region_of(zone, provider) == region


def test_a_managed_candidate_in_an_aliyun_international_zone_has_its_region() -> None:
    assert parse_candidate("aliyun:ap-southeast-1a:ecs.gn7i-c8g1.2xlarge:spot").region == "ap-southeast-1"
