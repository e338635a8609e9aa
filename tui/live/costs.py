"""The app's live cost counters: a CostTracker and the ledger, on one thread of their own.

The tracker is fed the same hellos, job objects and journal records the fleet model takes (the
connection service hands them over from its drain, on the app thread: a queue put, nothing more). This thread
reads the hosts' price settings, folds, prices the fleet about once a second, writes every cost
fact to the ledger (SQLite: IO, never on the event loop), marks the fleet rules active every
minute, and hands back a `CostBoard`: plain numbers the widgets draw. No Textual here.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..cost.collect import LOCAL, local_boot_time
from ..cost.ledger import Fact, Ledger
from ..cost.report import CostContext
from ..cost.rules import fleet_today_over
from ..cost.settings import HostPrice, host_price
from ..cost.tracker import CostTracker
from ..fleet.costs import CostBoard, JobCostShown
from ..hosts_file import HostsFileError, host_fields

REPORT_PERIOD = 1.0  # counters move once a second
RULES_PERIOD = 60.0  # the ledger's "a client enforces fleet rules" heartbeat
NEWS_DELAY = (
    0.05  # a listing that made jobs' costs known is reported this soon (the rest of it comes meanwhile)
)
PUSH_RETRY = 30.0  # a host whose agent could not be told its price is tried again after this


def host_settings(name: str) -> dict[str, Any]:
    """The host's price settings; a broken hosts.toml prices nothing (the app reports the file at start)."""
    try:
        return host_fields(name)
    except HostsFileError:
        return {}


class CostEngine:
    """Owns the tracker and the ledger; everything runs on its thread. `on_board` and `on_note` are
    called from that thread (the caller posts a message)."""

    def __init__(
        self,
        on_board: Callable[[CostBoard], None],
        on_note: Callable[[str], None],
        ledger_path: Callable[[], Path] | None = None,
        ctx: CostContext | None = None,
        settings_for: Callable[[str], Mapping[str, Any]] = host_settings,
        push: Callable[[str, HostPrice, float | None], str | None] | None = None,
    ) -> None:
        self._on_board, self._on_note = on_board, on_note
        self._ledger_path, self._settings_for = ledger_path, settings_for
        self._push = push  # tells a host's agent its price (running budgets follow it); blocking
        self._pushed: dict[str, float | None] = {}  # per host: the hosts.toml mtime last told
        self._push_retry: dict[str, float] = {}  # per host: no new try before (a host down)
        self._q: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._thread = threading.Thread(target=self._main, name="gpudeck-costs", daemon=True)
        self._news = False  # a job's figures became known since the last report
        self._fed: set[str] = set()  # jobs whose journal the tracker has read from seq 1, or summarised
        # Per job: the report's JSON object and the board's figures made from it. The tracker hands
        # back the same object while a job's figures stand (every ended job), so is-equal skips it.
        self._boarded: dict[str, tuple[dict[str, Any], bool, JobCostShown]] = {}
        self.ledger: Ledger | None = None
        self.ctx = ctx or CostContext()

    # -- from the app thread: cheap, non-blocking ------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: float = 2.0) -> None:
        self._q.put(("quit",))
        if self._thread.is_alive():
            self._thread.join(wait)

    def hello(self, host: str, hello: dict[str, Any], offset: float) -> None:
        self._q.put(("hello", host, hello, offset))

    def jobs(self, host: str, jobs: list[dict[str, Any]]) -> None:
        self._q.put(("jobs", host, jobs))

    def records(self, host: str, job: str, node: str, records: list[dict[str, Any]]) -> None:
        self._q.put(("events", host, job, node, records))

    def record(self, fact: Fact) -> None:
        """A fact the app learned (e.g. a fleet-budget stop), written on this thread."""
        self._q.put(("fact", fact))

    # -- the thread --------------------------------------------------------------------------------

    def _main(self) -> None:
        if self._ledger_path is not None:
            try:
                self.ledger = Ledger(self._ledger_path(), warn=self._on_note)
            except Exception as exc:  # no ledger: counters still move, nothing is recorded
                self._on_note(f"cost ledger unavailable: {exc}")
        tracker = CostTracker(self.ctx, self.ledger)
        paused = self._rules_paused()
        next_report = time.monotonic()
        next_mark = 0.0
        try:
            while True:
                wait = next_report - time.monotonic()
                if wait <= 0:  # a steady stream of records must not starve the counters
                    next_report = time.monotonic() + REPORT_PERIOD
                    if self.ledger is not None and time.monotonic() >= next_mark:
                        next_mark = time.monotonic() + RULES_PERIOD
                        self._guard("fleet rules heartbeat", self.ledger.mark_rules_active, time.time())
                    self._guard("host prices", self._refresh_prices, tracker)
                    self._on_board(self._board(tracker, paused))
                    continue
                try:
                    item = self._q.get(timeout=wait)
                except queue.Empty:
                    continue
                if item[0] == "quit":
                    return
                self._guard("cost update", self._apply, tracker, item)
                if self._news:  # a job's cost just became known: shown now, not up to a period later
                    self._news = False
                    next_report = min(next_report, time.monotonic() + NEWS_DELAY)
        finally:
            if self.ledger is not None:
                self.ledger.close()

    def _guard(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """A bad record or a locked database costs one note, not the counters' thread."""
        try:
            fn(*args)
        except Exception as exc:
            self._on_note(f"{what}: {type(exc).__name__}: {exc}")

    def _refresh_prices(self, tracker: CostTracker) -> None:
        """Watch hosts.toml: when it changed (a hand edit, `hosts set`, a catalog switch, a removal),
        every host's price is read again and told to its agent (running budgets follow it), the
        change dated at the file's mtime, not at the next reconnect."""
        from ..hosts_file import hosts_path

        try:
            mtime: float | None = hosts_path().stat().st_mtime
        except OSError:
            mtime = None
        changed = mtime != tracker.settings_changed_at
        tracker.settings_changed_at = mtime
        for host in tracker.hosts():
            tell = (
                self._push is not None
                and self._pushed.get(host, -1.0) != mtime
                and time.monotonic() >= self._push_retry.get(host, 0.0)
            )
            if not changed and not tell:
                continue
            price = host_price(self._settings_for(host))
            tracker.set_price(host, price)
            if tell:
                assert self._push is not None
                offset, host_now = tracker.clock(host)
                # Silent on failure (an older agent, a host down): tried again in a while.
                if self._push(host, price, None if mtime is None else min(host_now, mtime + offset)) is None:
                    self._pushed[host] = mtime
                else:
                    self._push_retry[host] = time.monotonic() + PUSH_RETRY

    def _rules_paused(self) -> float | None:
        """When the last client stopped enforcing fleet rules (0: never), before we start to."""
        if self.ledger is None or self.ctx.daily_budget is None:
            return None
        return self.ledger.rules_paused_since(time.time())

    def _apply(self, tracker: CostTracker, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "hello":
            _, host, hello, offset = item
            tracker.set_host(
                host, host_price(self._settings_for(host)), hello, offset, _boot_time(host, hello)
            )
            self._refresh_prices(tracker)
        elif kind == "jobs":
            _, host, jobs = item
            for job in jobs if isinstance(jobs, list) else ():
                if isinstance(job, dict) and isinstance(job.get("id"), str) and tracker.on_job(host, job):
                    self._news |= job["id"] not in self._fed
                    self._fed.add(job["id"])  # an ended job's summary: known without its journal
        elif kind == "events":
            _, host, job, node, records = item
            tracker.on_records(host, job, node, records)
            self._fed.add(job)
        elif kind == "fact" and self.ledger is not None:
            self.ledger.record(item[1], time.time())

    def _board(self, tracker: CostTracker, paused: float | None) -> CostBoard:
        try:
            report = tracker.report()
        except Exception as exc:  # a surprise in remote data: say it once per report, keep going
            self._on_note(f"cost counters: {type(exc).__name__}: {exc}")
            return CostBoard(self.ctx.currency, daily_budget=self.ctx.daily_budget)
        hosts = report["hosts"]
        priced = [h for h in hosts if h["burn_usd_per_hour"] is not None]
        with_today = [h for h in hosts if h["today_usd"] is not None]
        fleet = report["fleet"]
        jobs = {}
        boarded: dict[str, tuple[dict[str, Any], bool, JobCostShown]] = {}
        for j in report["jobs"]:
            known = j["id"] in self._fed and j["accrued_usd"] is not None
            last = self._boarded.get(j["id"])
            if last is not None and last[0] is j and last[1] == known:
                figures = last[2]
            else:
                figures = JobCostShown(
                    accrued=j["accrued_usd"] if known else None,
                    burn=j["burn_usd_per_hour"] if known else None,
                    projected=j["projected_usd"] if known else None,
                    idle=j["idle_usd"] if known else None,
                    budget=j.get("budget"),
                    budget_status=j.get("budget_status"),
                )
            jobs[j["id"]] = figures
            boarded[j["id"]] = (j, known, figures)
        self._boarded = boarded
        today_by_currency = fleet.get("today") or {}
        over = (
            fleet_today_over(today_by_currency, self.ctx.daily_budget, self.ctx.currency, self.ctx.fx or {})
            if with_today
            else None
        )
        return CostBoard(
            currency=self.ctx.currency,
            burn=fleet["burn_usd_per_hour"] if priced else None,
            today=fleet["today_usd"] if with_today else None,
            daily_budget=self.ctx.daily_budget,
            over=over,
            unpriced=tuple(h["name"] for h in hosts if h["burn_usd_per_hour"] is None),
            jobs=jobs,
            rules_paused_since=paused,
        )


def _boot_time(host: str, hello: dict[str, Any]) -> float | None:
    """When the host started (its clock): hello's boot_time, else its uptime, else /proc for local."""
    boot = hello.get("boot_time") if isinstance(hello, dict) else None
    if isinstance(boot, (int, float)) and not isinstance(boot, bool):
        return float(boot)
    uptime, now = (hello.get("uptime_s"), hello.get("time")) if isinstance(hello, dict) else (None, None)
    if isinstance(uptime, (int, float)) and isinstance(now, (int, float)):
        return float(now) - float(uptime)
    return local_boot_time() if host == LOCAL else None
