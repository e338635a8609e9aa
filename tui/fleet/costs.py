"""The live cost board: plain numbers the widgets draw, made by the cost service about once a second."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class JobCostShown:
    """One job's figures in the board's currency; None: not known (never shown as 0)."""

    accrued: float | None = None
    burn: float | None = None  # per hour, now
    projected: float | None = None
    idle: float | None = None
    budget: float | None = None
    budget_status: str | None = None  # ok / warning / over


@dataclass(frozen=True)
class CostBoard:
    currency: str = "USD"
    burn: float | None = None  # the fleet's burn per hour (hosts of known price)
    today: float | None = None  # the fleet's spend today, in the user's time zone
    daily_budget: float | None = None
    over: bool | None = None  # today >= daily_budget; None: no budget or undecidable
    unpriced: tuple[str, ...] = ()  # hosts whose price is unknown
    jobs: Mapping[str, JobCostShown] = field(default_factory=dict)
    rules_paused_since: float | None = None  # set once, at start: when the last client stopped enforcing


EMPTY = CostBoard()
