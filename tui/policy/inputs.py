"""What the engine decides from: plain values gathered by observe.py (or scripted by a test). No IO."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..cost.catalog import CatalogEntry
from .rules import Policies


class Point(NamedTuple):
    t: float  # epoch seconds (the host's clock, as journaled)
    value: float


def append_bounded(points: list[Point], point: Point, keep: float) -> None:
    """Add a point; drop those older than `keep` seconds but the one in force at the window's start."""
    points.append(point)
    cut = point.t - keep
    while len(points) > 1 and points[1].t <= cut:
        points.pop(0)


@dataclass(frozen=True)
class HostInstance:
    """What a job's master host is, as hosts.toml prices it (for vertical proposals)."""

    provider: str | None = None
    instance_type: str | None = None
    region: str | None = None
    market: str | None = None  # "spot" or "on-demand"


@dataclass(frozen=True)
class JobFacts:
    id: str
    name: str
    nodes: int
    hosts: tuple[str, ...]  # distinct, in rank order
    metrics: Mapping[str, list[Point]] = field(default_factory=dict)  # what the job printed, by name
    instance: HostInstance | None = None
    burn_per_node: float | None = None  # per hour of one node, in Inputs.currency; None: unknown
    budget_left: float | None = None  # what the job's budget has left, in Inputs.currency; None: no budget
    gpu: Mapping[tuple[str, str], list[Point]] = field(
        default_factory=dict
    )  # (host, gpu_util|gpu_mem), from its journals


@dataclass(frozen=True)
class Applied:
    """The last decision the controller applied for a rule and a job name (a resize makes a new id)."""

    t: float
    to: Any
    period: str | None = None  # a schedule's window period it was applied in


@dataclass(frozen=True)
class Inputs:
    now: float
    jobs: list[JobFacts]
    policies: Policies
    host_series: Mapping[tuple[str, str], list[Point]] = field(
        default_factory=dict
    )  # (host, metric): hosts' own samples
    catalog: list[CatalogEntry] = field(default_factory=list)
    memory: Mapping[tuple[str, str], Applied] = field(default_factory=dict)  # (rule, job name)
    fleet_budget_left: float | None = None  # what the fleet's daily budget has left today, in `currency`
    fleet_burn: float | None = None  # per hour the fleet burns now, in `currency`
    currency: str = "USD"  # the unit of every budget figure above ([cost] currency)
    observed_until: float | None = (
        None  # `eval --at` a later time: series are judged as of the data, not then
    )

    @property
    def data_now(self) -> float:
        return self.now if self.observed_until is None else min(self.now, self.observed_until)
