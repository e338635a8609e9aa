"""A cloud zone's region, per provider: the one rule that prices, spot quotes and managed moves use
(the catalog is per region, spot prices and launches per zone)."""

from __future__ import annotations

import re
from typing import overload

# us-east-1a, ap-northeast-1c, us-gov-west-1a; Aliyun's international zones are spelt the same
# (ap-southeast-1a, eu-central-1a). An AWS Local Zone (us-west-2-lax-1a) is kept whole.
_DIGIT_LETTER_ZONE = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+[a-z]")
# Aliyun's Chinese zones: cn-hangzhou-i, cn-beijing-a (the region, then "-letter").
_DASH_LETTER_ZONE = re.compile(r"[a-z]{2}(-[a-z0-9]+)+-[a-z]")


@overload
def region_of(zone: str, provider: str | None = None) -> str: ...
@overload
def region_of(zone: None, provider: str | None = None) -> None: ...
def region_of(zone: str | None, provider: str | None = None) -> str | None:
    """The region of `zone` (a region, a name no rule knows, or none, is returned as it is).
    `provider` None: a host whose provider is not said, read as AWS spells zones."""
    if not zone:
        return zone
    if provider == "aliyun" and _DASH_LETTER_ZONE.fullmatch(zone):
        return zone[:-2]
    if provider in (None, "aws", "aliyun") and _DIGIT_LETTER_ZONE.fullmatch(zone):
        return zone[:-1]
    return zone
