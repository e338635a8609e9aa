"""Rules the supervisor enforces while nobody watches: a job's budget and its idle stop.

Both stop the job gracefully (the same path as a user's stop) and journal their inputs first,
so `gpudeck` can always say why a job ended, even when the laptop was closed at the time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

WARN_FRACTION = 0.8
Journal = Callable[..., Any]


class AutoStop:
    def __init__(self, spec: Mapping[str, Any], journal: Journal, clock: Callable[[], float] = time.monotonic,
                 elapsed: float = 0.0) -> None:
        """`elapsed`: how long the job already ran (an adopter counts from the journal's `running`
        record, not from when it took over: a budget holds across a lost supervisor)."""
        self.clock = clock
        self.journal = journal
        self.started = clock() - elapsed
        price = spec.get("price") or {}
        self.per_hour = float(price.get("per_hour") or 0.0)
        self.share = float(price.get("share") or 1.0)
        self.currency = str(price.get("currency") or "USD")
        self.budget: Optional[float] = spec.get("budget")
        self.idle: Optional[Dict[str, float]] = spec.get("idle_stop")
        self.paused = False
        self.warned = False
        self.idle_since: Optional[float] = None
        self.idle_unavailable_said = False

    @property
    def active(self) -> bool:
        return bool(self.budget) or bool(self.idle)

    def accrued(self) -> float:
        """Wall time x share x price: what this job's part of the host cost since it started."""
        return (self.clock() - self.started) / 3600.0 * self.per_hour * self.share

    def set_paused(self, paused: bool) -> None:
        if paused != self.paused:
            self.paused = paused
            self.idle_since = None  # a resumed idle rule starts counting afresh
            self.journal("event", event="autostop_paused" if paused else "autostop_resumed", data={})

    def on_gpus(self, utils: Optional[List[Optional[float]]], reason: Optional[str] = None) -> None:
        """The job's GPUs' utilization now; None when the host cannot say (no driver)."""
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
            self.idle_since = self.clock()

    def check(self) -> Optional[str]:
        """A stop reason when a rule fires (journaled with its inputs), else None."""
        now = self.clock()
        if self.budget:
            accrued = self.accrued()
            inputs = {"accrued": round(accrued, 6), "budget": self.budget, "currency": self.currency,
                      "price_per_hour": self.per_hour, "share": self.share}
            if not self.warned and accrued >= WARN_FRACTION * self.budget:
                self.warned = True  # always before the stop, even when one check crosses both
                self.journal("event", event="budget_warning", data=inputs)
            if accrued >= self.budget:
                self.journal("event", event="autostop", data=dict(inputs, rule="budget"))
                return "budget: accrued %.2f %s reached the budget of %.2f" % (accrued, self.currency, self.budget)
        if self.idle and not self.paused and self.idle_since is not None:
            grace_over = now - self.started >= self.idle["grace_minutes"] * 60
            idle_for = now - self.idle_since
            if grace_over and idle_for >= self.idle["minutes"] * 60:
                data = dict(self.idle, rule="idle", idle_seconds=round(idle_for, 1))
                self.journal("event", event="autostop", data=data)
                return "idle: GPU utilization under %g%% for %.0f min" % (self.idle["below_pct"], idle_for / 60)
        return None


def read_paused(path: Path) -> Optional[bool]:
    try:
        with open(str(path), "rb") as f:
            body = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    paused = body.get("paused") if isinstance(body, dict) else None
    return paused if isinstance(paused, bool) else None
