"""Costs: the live cost counters, owned by the App (a Sink of the connection service).

It forwards what the fleet took in (hellos, job objects, the journal records the model accepted)
to a CostEngine, which prices the fleet on its own thread about once a second. Its board comes
back as a coalesced CostBoardUpdated; on the app thread the board goes onto the Fleet (the "cost"
change tag) and the fleet's daily budget is enforced: when today's spend reaches it, every
running job is stopped through the same action the `s` key uses, with a notification and a
ledger fact; and, once a day, `cloud_budget` (the Cloud service) stops the running cloud instances
the user opted in (tag gpudeck-managed=true), each decision journaled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from textual.app import App

from .. import paths
from ..cost.ledger import Fact
from ..cost.push import push_price
from ..cost.report import CostContext
from ..cost.settings import HostPrice
from ..fleet import Fleet, JobModel
from ..fleet.costs import CostBoard
from ..format import local_time, money
from ..live.costs import CostEngine
from ..messages import CostBoardUpdated, CostNote
from ..widgets.failures import say

FLEET_BUDGET_REASON = "fleet daily budget reached"


def _push(request: Callable[..., Any], host: str, price: HostPrice, at: float | None) -> str | None:
    """On the cost engine's thread: a price change reaches the host's running budgets."""
    return push_price(partial(request, host), price, at)


def ledger_path() -> Path:
    return paths.ensure_private(paths.data_dir()) / "state.db"


class Costs:
    def __init__(
        self,
        app: App[Any],
        fleet: Fleet,
        ctx: CostContext,
        stop: Callable[[JobModel, str], None],
        changed: Callable[[set[str]], None],
        ledger: bool = True,
        request: Callable[..., Any] | None = None,
        settings_for: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> None:
        self.app, self.fleet = app, fleet
        self._stop, self._changed = stop, changed

        def board(b: CostBoard) -> None:
            app.post_message(CostBoardUpdated(b))

        def note(text: str) -> None:
            app.post_message(CostNote(text))

        self.engine = CostEngine(
            board,
            note,
            ledger_path if ledger else None,
            ctx,
            push=None if request is None else partial(_push, request),
            **({} if settings_for is None else {"settings_for": settings_for}),  # a replay's recorded prices
        )
        self.budget_stopped: set[str] = set()  # jobs this client stopped for the daily budget
        self._noted: set[str] = set()
        self._paused_said = False
        self.cloud_budget: Callable[[CostBoard], None] | None = None  # the Cloud service's budget action
        self._cloud_budget_day: str | None = None  # the local day it last acted: once a day

    def start(self) -> None:
        self.engine.start()

    def stop(self) -> None:
        self.engine.stop()

    # -- the connection service's Sink (app thread): queue puts only -------------------------------

    def hello(self, host: str, hello: Any) -> None:
        if isinstance(hello, dict):
            host_model = self.fleet.hosts.get(host)
            self.engine.hello(host, hello, host_model.clock_offset if host_model else 0.0)

    def jobs(self, host: str, jobs: Any) -> None:
        if isinstance(jobs, list):
            self.engine.jobs(host, jobs)

    def records(self, host: str, job: str, node: str, records: Any, after_seq: int) -> None:
        """The records the fleet model just accepted for (job, node): seq > after_seq, in order, so
        the tracker sees each exactly once and a job's first feed starts at seq 1."""
        if not isinstance(records, list):
            return
        fresh = [
            r
            for r in records
            if isinstance(r, dict) and isinstance(r.get("seq"), int) and r["seq"] > after_seq
        ]
        if fresh:
            fresh.sort(key=lambda r: r["seq"])
            self.engine.records(host, job, node, fresh)

    # -- boards back on the app thread -----------------------------------------------------------

    def updated(self, board: CostBoard) -> None:
        # A board like the last (nothing runs, no priced host's day ticking) redraws nothing: with
        # 500 ended jobs the engine hands back the very same figures every second.
        unchanged = board == self.fleet.costs
        self.fleet.costs = board
        if not unchanged:
            self._changed({"cost"})
        if board.rules_paused_since and not self._paused_said:  # 0: never enforced before, nothing to say
            self._paused_said = True
            say(
                self.app,
                f"fleet rules paused since {local_time(board.rules_paused_since)} (no gpudeck was "
                "running); enforcing the daily budget again",
                "fleet budget",
                timeout=8,
            )
        if board.over:
            self._enforce(board)
            day = time.strftime("%Y-%m-%d")
            if self.cloud_budget is not None and self._cloud_budget_day != day:
                self._cloud_budget_day = day
                self.cloud_budget(board)

    def note(self, text: str) -> None:
        if text not in self._noted:  # a repeating failure is said once
            self._noted.add(text)
            say(self.app, text[:300], "cost", "warning", timeout=8)

    def _enforce(self, board: CostBoard) -> None:
        """Today's spend reached the daily budget: stop what runs (once per job)."""
        due = [j for j in self.fleet.jobs_sorted() if j.active and j.id not in self.budget_stopped]
        if not due:
            return
        today = money(board.today, board.currency)
        budget = money(board.daily_budget, board.currency)
        names = ", ".join(j.name or j.id for j in due[:5]) + (" …" if len(due) > 5 else "")
        say(
            self.app,
            f"daily budget reached: today {today} of {budget}; stopping {names}",
            "fleet budget",
            "warning",
            timeout=15,
        )
        for job in due:
            self.budget_stopped.add(job.id)
            self._stop(job, FLEET_BUDGET_REASON)
            for node in job.nodes.values():
                host = self.fleet.hosts.get(node.host)
                at = time.time() + (host.clock_offset if host else 0.0)
                self.engine.record(
                    Fact(
                        at,
                        node.host,
                        "fleet_budget_stop",
                        job.id,
                        node.node,
                        data={
                            "reason": FLEET_BUDGET_REASON,
                            "today": board.today,
                            "daily_budget": board.daily_budget,
                            "currency": board.currency,
                        },
                    )
                )
