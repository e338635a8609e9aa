"""`--fallback` candidates: host names and cloud candidates `PROVIDER:ZONE:TYPE:MARKET[:IMAGE]`
(`aws:us-east-1a:g5.xlarge:spot`), mixed and tried in order. A cloud candidate launches an instance
when its turn comes (tui/managed/cloud.py); here it is only read and checked, at `run` time, in one
line naming the field that is wrong.

The image is optional because a provider may not need one in every account; AWS and Aliyun do, and
say so at launch (then the next candidate is tried, the error said as it is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..regions import region_of

PROVIDERS = ("aws", "aliyun")
MARKETS = ("spot", "on-demand")
_ZONE = re.compile(r"^[a-z]{2,}(-[a-z0-9]+)+$")
_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class CloudCandidate:
    provider: str
    zone: str  # a zone (us-east-1a, cn-hangzhou-i) or a region (us-east-1, cn-hangzhou)
    type: str
    market: str
    image: str | None = None

    @property
    def spot(self) -> bool:
        return self.market == "spot"

    @property
    def region(self) -> str:
        return region_of(self.zone, self.provider)

    def __str__(self) -> str:
        tail = f":{self.image}" if self.image else ""
        return f"{self.provider}:{self.zone}:{self.type}:{self.market}{tail}"


def launch_token(head: str, recovery: int, node: int, index: int) -> str:
    """A cloud candidate's launch token: the chain's head, its recovery number (both journaled), the
    node and the candidate's place in --fallback. A controller killed mid-launch asks for that same
    instance again; two candidates never share one (a provider would hand back the first's instance)."""
    return f"gpudeck-{head}-r{recovery}-n{node}-c{index}"


def is_cloud(text: str) -> bool:
    return ":" in text


def parse_candidate(text: str) -> CloudCandidate:
    """ValueError with one line naming the candidate and its wrong field."""
    parts = text.split(":")
    where = f"--fallback {text!r}"
    if len(parts) not in (4, 5) or not all(parts):
        raise ValueError(f"{where}: a cloud candidate is PROVIDER:ZONE:TYPE:MARKET[:IMAGE]")
    provider, zone, type_, market = parts[:4]
    if provider not in PROVIDERS:
        raise ValueError(f"{where}: provider {provider!r} is not one of {', '.join(PROVIDERS)}")
    if not _ZONE.match(zone):
        raise ValueError(f"{where}: zone {zone!r} is not a zone or region (us-east-1a, cn-hangzhou-i)")
    if not _TYPE.match(type_):
        raise ValueError(f"{where}: type {type_!r} is not an instance type (g5.xlarge)")
    if market not in MARKETS:
        raise ValueError(f"{where}: market {market!r} is not one of {', '.join(MARKETS)}")
    return CloudCandidate(provider, zone, type_, market, parts[4] if len(parts) == 5 else None)


def parse_fallback(text: str | None, hosts: list[str]) -> tuple[str, ...]:
    """The candidates in order, each checked: a host in hosts.toml or a well-formed cloud candidate."""
    items = tuple(x.strip() for x in (text or "").split(",") if x.strip())
    for item in items:
        if is_cloud(item):
            parse_candidate(item)
        elif item not in hosts:
            raise ValueError(f"--fallback: no host {item!r} in hosts.toml (gpudeck hosts)")
    return items


# A launch refused for want of capacity or price: the next candidate, said with the provider's code.
CAPACITY_CODES = (
    "InsufficientInstanceCapacity",
    "InsufficientCapacity",
    "SpotMaxPriceTooLow",
    "MaxSpotInstanceCountExceeded",
    "InsufficientHostCapacity",
    "Unsupported",
    "OperationDenied.NoStock",
    "OperationDenied.NoStockForSpot",
    "InvalidResourceType.NotSupported",
)
_CODE = re.compile(r"(?:RunInstances|launch): ([A-Za-z][A-Za-z0-9.]+):")


def error_code(message: str) -> str | None:
    """The provider's error code in a launch error's line (`aws us-east-1 RunInstances: CODE: …`)."""
    found = _CODE.search(message)
    return found.group(1) if found else None


def is_capacity(code: str | None) -> bool:
    return code is not None and (code in CAPACITY_CODES or code.startswith("OperationDenied.NoStock"))
