"""One moment of the fleet as the exporters see it: each host's GPUs and each job's latest point.

Plain data: `gather.py` fills it from the agents, the bench fills it with synthetic hosts, and
`exposition.py` turns it into text. Nothing here does IO.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    model: str
    util: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None
    temp_c: float | None
    power_w: float | None

    @classmethod
    def from_sample(cls, obj: dict[str, Any]) -> Gpu:
        """One GPU of the agent's `gpus` sample."""
        uuid = str(obj.get("uuid") or f"index:{obj.get('index')}")
        return cls(
            index=int(obj.get("index") or 0),
            uuid=uuid,
            model=str(obj.get("name") or ""),
            util=_num(obj.get("util")),
            mem_used_mib=_num(obj.get("mem_used_mib")),
            mem_total_mib=_num(obj.get("mem_total_mib")),
            temp_c=_num(obj.get("temp_c")),
            power_w=_num(obj.get("power_w")),
        )


@dataclass(frozen=True)
class Host:
    name: str
    up: bool
    gpus: list[Gpu] = field(default_factory=list)


@dataclass(frozen=True)
class JobPoint:
    """A job's latest values. `host` is its lead node's host; None values are left out of /metrics."""

    id: str
    name: str
    host: str
    state: str
    loss: float | None = None
    step: float | None = None
    samples_per_second: float | None = None
    lr: float | None = None
    cost: float | None = None
    currency: str = "USD"
    gpu_seconds: float | None = None


@dataclass(frozen=True)
class Snapshot:
    hosts: list[Host]
    jobs: list[JobPoint]


def _num(value: Any) -> float | None:
    """A number as the agent sent it; anything else (null, a string, a bool) is unknown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


number = _num
