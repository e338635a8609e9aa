"""One moment of the fleet as the exporters see it: each host's GPUs and each job's latest point.

Plain data: the client's `tui/export/gather.py` fills it from the agents, the agent's `hostdata.py` from its own host, the bench fills it with synthetic hosts, and
`exposition.py` turns it into text. Nothing here does IO.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    model: str
    util: Optional[float]
    mem_used_mib: Optional[float]
    mem_total_mib: Optional[float]
    temp_c: Optional[float]
    power_w: Optional[float]

    @classmethod
    def from_sample(cls, obj: Dict[str, Any]) -> Gpu:
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
    gpus: List[Gpu] = field(default_factory=list)


@dataclass(frozen=True)
class JobPoint:
    """A job's latest values. `host` is its lead node's host; None values are left out of /metrics."""

    id: str
    name: str
    host: str
    state: str
    loss: Optional[float] = None
    step: Optional[float] = None
    samples_per_second: Optional[float] = None
    lr: Optional[float] = None
    cost: Optional[float] = None
    currency: str = "USD"
    gpu_seconds: Optional[float] = None


@dataclass(frozen=True)
class Snapshot:
    hosts: List[Host]
    jobs: List[JobPoint]


def _num(value: Any) -> Optional[float]:
    """A number as the agent sent it; anything else (null, a string, a bool) is unknown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


number = _num
