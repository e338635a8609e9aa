"""Rules the supervisor enforces while nobody watches: a job's budget and its idle stop.

Both stop the job gracefully (the same path as a user's stop) and journal their inputs first,
so `gpudeck` can always say why a job ended, even when the laptop was closed at the time.
The budget's spend follows the host's price and the job's share as they change (budget.py), and its
stop starts early enough for the job to end on budget: when the spend so far plus the spend over the
stop's lead time reaches it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..clock import monotonic, wall
from .budget import BudgetMeter

WARN_FRACTION = 0.8
Journal = Callable[..., Any]


class AutoStop:
    def __init__(
        self,
        spec: Mapping[str, Any],
        journal: Journal,
        clock: Callable[[], float] = wall,
        files_dir: Optional[Path] = None,
        started: Optional[float] = None,
        mono: Optional[Callable[[], float]] = None,
    ) -> None:
        """`started`: when the job began (host clock), when not now: a supervisor adopting a lost
        job counts from the journal's `running` record, so a budget holds across the loss.

        Every duration runs on `mono` (a step of the wall `clock` changes no spend and no idle
        time); the spend's timeline is `started` plus the monotonic seconds since, on which the
        price changes (dated in wall time) fall. A fake `clock` without a `mono` drives both."""
        self.clock = clock
        self.mono: Callable[[], float] = mono or (monotonic if clock is wall else clock)
        self.journal = journal
        self.started = clock() if started is None else started
        self._mono_started = self.mono() - max(0.0, clock() - self.started)
        # A budget is the job's, across its nodes: each node's supervisor holds the job's spend to it
        # by ending its own part at 1/nodes of it (each host sees only its own node's spend).
        self.job_budget: Optional[float] = spec.get("budget")
        self.nodes = nodes_of(spec)
        self.budget: Optional[float] = self.job_budget / self.nodes if self.job_budget else self.job_budget
        self.meter = BudgetMeter(spec, self.started, files_dir if self.budget else None)
        self.currency = self.meter.currency
        self.unknown_said = False
        self.idle: Optional[Dict[str, float]] = spec.get("idle_stop")
        self.paused = False
        self.warned = False
        self.idle_since: Optional[float] = None
        self.idle_unavailable_said = False

    @property
    def active(self) -> bool:
        return bool(self.budget) or bool(self.idle)

    def now(self) -> float:
        """The spend's clock: the start's wall time plus the real seconds since."""
        return self.started + (self.mono() - self._mono_started)

    def accrued(self) -> float:
        """What this job's part of the host cost since it started (price x share over time)."""
        now = self.now()
        self.meter.refresh(now)
        return self.meter.accrued(now)[0]

    def set_paused(self, paused: bool) -> None:
        if paused != self.paused:
            self.paused = paused
            self.idle_since = None  # a resumed idle rule starts counting afresh
            self.journal("event", event="autostop_paused" if paused else "autostop_resumed", data={})

    def on_gpus(self, utils: Optional[List[Optional[float]]], reason: Optional[str] = None) -> None:
        """The job's GPUs' utilization now; None when the host cannot say (no driver)."""
        if utils is None and reason is not None:
            self.meter.split_by = "jobs"  # no GPU here: jobs running together split the host
        elif utils:
            self.meter.split_by = "gpus"
        if not self.idle:
            return
        if not utils:
            if not self.idle_unavailable_said:
                self.idle_unavailable_said = True
                why = reason or "no GPU of this job is visible to NVML"
                self.journal("event", event="idle_stop_unavailable", data={"reason": why})
            return
        busy = any(u is None or u >= self.idle["below_pct"] for u in utils)
        if busy:
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = self.mono()

    def check(self) -> Optional[str]:
        """A stop reason when a rule fires (journaled with its inputs), else None."""
        if self.budget:
            reason = self._check_budget(self.now())
            if reason:
                return reason
        if self.idle and not self.paused and self.idle_since is not None:
            mono = self.mono()
            grace_over = mono - self._mono_started >= self.idle["grace_minutes"] * 60
            idle_for = mono - self.idle_since
            if grace_over and idle_for >= self.idle["minutes"] * 60:
                data = dict(self.idle, rule="idle", idle_seconds=round(idle_for, 1))
                self.journal("event", event="autostop", data=data)
                return "idle: GPU utilization under %g%% for %s" % (self.idle["below_pct"], _span(idle_for))
        return None

    def _check_budget(self, now: float) -> Optional[str]:
        assert self.budget is not None
        self.meter.refresh(now)
        accrued, unknown_since = self.meter.accrued(now)
        inputs = dict(
            self.meter.inputs(now), accrued=round(accrued, 6), budget=self.budget, currency=self.currency
        )
        if self.nodes > 1:
            inputs.update(job_budget=self.job_budget, nodes=self.nodes)
        if unknown_since is not None:
            if not self.unknown_said:  # said once: the spend is unknown, so the budget cannot hold
                self.unknown_said = True
                self.journal(
                    "event",
                    event="budget_unenforced",
                    data=dict(
                        inputs,
                        since=unknown_since,
                        reason="the host's price was removed: the spend is unknown from then",
                    ),
                )
            return None
        if self.unknown_said:
            self.unknown_said = False
            self.journal("event", event="budget_enforced", data=inputs)
        if not self.warned and accrued >= WARN_FRACTION * self.budget:
            self.warned = True  # always before the stop, even when one check crosses both
            self.journal("event", event="budget_warning", data=inputs)
        during_stop = self.meter.rate_per_s(now) * self.meter.lead
        # a stop needs a measured spend first: a budget under the stop's lead × price would otherwise
        # stop the job at its first check, before it spent anything
        if accrued > 0 and accrued + during_stop >= self.budget:
            if not self.warned:
                self.warned = True
                self.journal("event", event="budget_warning", data=inputs)
            self.journal(
                "event", event="autostop", data=dict(inputs, rule="budget", during_stop=round(during_stop, 6))
            )
            if during_stop > 0:
                return (
                    "budget: accrued %s %s, with %s more over the stop (%.0f s), reaches the budget of %s"
                    % (
                        amount(accrued),
                        self.currency,
                        amount(during_stop),
                        self.meter.lead,
                        amount(self.budget),
                    )
                    + self._part()
                )
            return (
                "budget: accrued %s %s reached the budget of %s"
                % (
                    amount(accrued),
                    self.currency,
                    amount(self.budget),
                )
                + self._part()
            )
        return None

    def _part(self) -> str:
        if self.nodes <= 1 or self.job_budget is None:
            return ""
        return " (this node's 1/%d of the job's %s)" % (self.nodes, amount(self.job_budget))


def nodes_of(spec: Mapping[str, Any]) -> int:
    """How many nodes share the job's budget: the node count it was launched (or resized) with."""
    mn = spec.get("multinode") or spec.get("placement")  # a Slurm allocation's nodes share it too
    nodes = mn.get("nodes") if isinstance(mn, dict) else None
    return nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 1 else 1


def amount(value: float) -> str:
    """Money with enough digits to be true (a 0.005 budget is not "0.01"); tui.format.amount's rule."""
    # the band is chosen by the value as it will be rounded: 0.9999 is "1.00", not "1.000"
    decimals = min(10, max(3, 1 - int(math.floor(math.log10(abs(value)))))) if value else 2
    if value == 0 or abs(round(value, decimals)) >= 1:
        return "%.2f" % value
    text = "%.*f" % (decimals, value)
    while text.endswith("0") and len(text.split(".")[1]) > 3:
        text = text[:-1]
    return text


def read_paused(path: Path) -> Optional[bool]:
    try:
        with open(str(path), "rb") as f:
            body = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    paused = body.get("paused") if isinstance(body, dict) else None
    return paused if isinstance(paused, bool) else None


def _span(seconds: float) -> str:
    """A duration as people say it: "15 s" under a minute (never "0 min"), else whole minutes."""
    return "%.0f s" % seconds if seconds < 59.5 else "%.0f min" % (seconds / 60)
