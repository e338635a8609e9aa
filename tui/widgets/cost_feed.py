"""CostFeed: the live cost counters' glue (a widget that never shows), a child of the FleetFeed.

The FleetFeed forwards what it applies to the fleet (hellos, job objects, the journal records the
model accepted) to a CostEngine, which prices the fleet on its own thread about once a second. Its
board comes back as a coalesced message; on the app thread it is published for the widgets (the
"cost" change tag) and the fleet's daily budget is enforced: when today's spend reaches it, every
running job is stopped through the same action the `s` key uses, with a notification and a
ledger fact.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.message import Message
from textual.widget import Widget

from .. import paths
from ..cost.ledger import Fact
from ..fleet import Fleet, JobModel
from ..live.costs import CostBoard, CostEngine, money, publish, when
from .failures import guarded


def _ledger_path() -> Path:
    return paths.ensure_private(paths.data_dir()) / "state.db"


class CostFeed(Widget):
    DEFAULT_CSS = "CostFeed { display: none; }"

    class Updated(Message, bubble=False):
        """A new board; replaces one not yet handled."""

        def __init__(self, board: CostBoard) -> None:
            super().__init__()
            self.board = board

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, CostFeed.Updated)

    class Note(Message, bubble=False):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, fleet: Fleet, stop: Callable[[JobModel], None], changed: Callable[[set[str]], None],
                 ledger: bool = True, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fleet, self._stop, self._changed = fleet, stop, changed
        self.engine = CostEngine(lambda b: self.post_message(self.Updated(b)),
                                 lambda text: self.post_message(self.Note(text)),
                                 _ledger_path if ledger else None)
        self.budget_stopped: set[str] = set()  # jobs this client stopped for the daily budget
        self._noted: set[str] = set()
        self._paused_said = False

    def on_mount(self) -> None:
        self.engine.start()

    def on_unmount(self) -> None:
        self.engine.stop()

    # -- fed by the FleetFeed's drain (app thread): queue puts only --------------------------------

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
        fresh = [r for r in records if isinstance(r, dict) and isinstance(r.get("seq"), int) and r["seq"] > after_seq]
        if fresh:
            fresh.sort(key=lambda r: r["seq"])
            self.engine.records(host, job, node, fresh)

    # -- boards back on the app thread -----------------------------------------------------------

    @guarded("cost counters")
    def on_cost_feed_updated(self, message: CostFeed.Updated) -> None:
        board = message.board
        publish(self.fleet, board)
        self._changed({"cost"})
        if board.rules_paused_since and not self._paused_said:  # 0: never enforced before, nothing to say
            self._paused_said = True
            self.notify(f"fleet rules paused since {when(board.rules_paused_since)} (no gpudeck was running); "
                        "enforcing the daily budget again", title="fleet budget", timeout=8)
        if board.over:
            self._enforce(board)

    def on_cost_feed_note(self, message: CostFeed.Note) -> None:
        if message.text not in self._noted:  # a repeating failure is said once
            self._noted.add(message.text)
            self.notify(message.text[:300], title="cost", severity="warning", timeout=8)

    def _enforce(self, board: CostBoard) -> None:
        """Today's spend reached the daily budget: stop what runs (once per job)."""
        due = [j for j in self.fleet.jobs_sorted() if j.active and j.id not in self.budget_stopped]
        if not due:
            return
        today = money(board.today, board.currency)
        budget = money(board.daily_budget, board.currency)
        names = ", ".join(j.name or j.id for j in due[:5]) + (" …" if len(due) > 5 else "")
        self.notify(f"daily budget reached: today {today} of {budget}; stopping {names}",
                    title="fleet budget", severity="warning", timeout=15)
        for job in due:
            self.budget_stopped.add(job.id)
            self._stop(job)
            for node in job.nodes.values():
                host = self.fleet.hosts.get(node.host)
                at = time.time() + (host.clock_offset if host else 0.0)
                self.engine.record(Fact(at, node.host, "fleet_budget_stop", job.id, node.node,
                                        data={"reason": "fleet daily budget reached", "today": board.today,
                                              "daily_budget": board.daily_budget, "currency": board.currency}))
