"""What the inbox brings, applied to the fleet on the app thread: journal records, GPU samples,
hellos and job listings (each told to the sinks, the cost service among them), poll outcomes handed
back to the connections, and the jobs seen to end. At most DRAIN_BUDGET records a drain and one drain
every DRAIN_GAP s: a replay of old journals must not stall keys, and each wake of the loop costs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from textual.app import App

from ..fleet import Fleet
from ..live.inbox import Inbox, Update
from ..messages import InboxPending, JobEnded
from .redraw import later
from .tails import Tails

DRAIN_GAP = 0.1  # at most ~10 drains a second: each drain costs (two messages, the sinks, the
# redraw's bookkeeping), a bigger batch costs no more; redraws come at most every 0.1 s anyway
DRAIN_BUDGET = 1000  # journal records applied per drain


@dataclass
class _Batch:
    """What one drain learnt: the change tags, the jobs fed records, the hosts that listed their jobs."""

    tags: set[str] = field(default_factory=set)
    fed: set[str] = field(default_factory=set)
    listed: set[str] = field(default_factory=set)


class Sink(Protocol):
    """Told, on the app thread, what the fleet took in (the cost service is one)."""

    def hello(self, host: str, hello: Any) -> None: ...

    def jobs(self, host: str, jobs: Any) -> None: ...

    def records(self, host: str, job: str, node: str, records: Any, after_seq: int) -> None: ...


Polled = Callable[[str, str, int, "BaseException | None"], None]  # host, kind, generation, error


class Intake:
    def __init__(
        self,
        app: App[Any],
        fleet: Fleet,
        inbox: Inbox,
        tails: Tails,
        publish: Callable[[set[str]], None],
        polled: Polled,
    ) -> None:
        self.app, self.fleet, self.inbox, self.tails = app, fleet, inbox, tails
        self.publish, self.polled = publish, polled
        self.sinks: list[Sink] = []
        self.active: set[str] | None = None  # ids of the active jobs as of the last drain; None: count again
        self._last_drain = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._apply = {
            "events": self._events,
            "gpus": self._gpus,
            "hello": self._hello,
            "jobs": self._jobs,
            "listing": self._listing,
            "polled": self._polled,
            "slurm": self._slurm,
        }

    def pending(self) -> None:
        """The inbox has news: drained now, or, within DRAIN_GAP of the last drain, once when the gap
        is over (the inbox wakes nobody again until then)."""
        wait = self._last_drain + DRAIN_GAP - time.monotonic()
        if wait <= 0:
            self.drain()
        elif self._timer is None:
            self._timer = later(wait, self._timed_drain)

    def _timed_drain(self) -> None:
        # Through the app's guarded handler, like every drain: bad data becomes a note, not a crash.
        self._timer = None
        self._last_drain = 0.0
        self.app.post_message(InboxPending())

    def drain(self) -> None:
        """Apply what the inbox holds to the fleet."""
        self._last_drain = time.monotonic()
        if self.active is None:  # counted again only after a job came or changed state
            self.active = {j.id for j in self.fleet.jobs.values() if j.active}
        active_before = self.active
        batch = _Batch()
        for update in self.inbox.take(DRAIN_BUDGET):
            handler = self._apply.get(update.kind)
            if handler is not None:
                handler(update, batch)
        self._ended(active_before)
        self._summarise(batch.fed | {j for j in active_before if j in self.fleet.jobs})
        if batch.listed:
            by_host = self.tails.jobs_by_host()  # once per drain, not per host: 64 hosts × 500 jobs add up
            for host in batch.listed:
                self.tails.ensure(host, by_host.get(host, []))
        self.publish(batch.tags)
        if len(self.inbox):  # more than one drain's worth: the rest after the keys waiting now, no gap
            self._last_drain = 0.0
            self.app.post_message(InboxPending())

    def _events(self, u: Update, batch: _Batch) -> None:
        if not (u.job and u.node):
            return
        batch.fed.add(u.job)
        after = self.fleet.last_seq(u.job, u.node)
        batch.tags |= self.fleet.apply_events(u.host, u.job, u.node, u.data, u.after)
        for sink in self.sinks:
            sink.records(u.host, u.job, u.node, u.data, after)

    def _gpus(self, u: Update, batch: _Batch) -> None:
        batch.tags |= self.fleet.apply_gpus(u.host, u.data)

    def _hello(self, u: Update, batch: _Batch) -> None:
        batch.tags |= self.fleet.apply_hello(u.host, u.data)
        for sink in self.sinks:
            sink.hello(u.host, u.data)

    def _slurm(self, u: Update, batch: _Batch) -> None:
        batch.tags |= self.fleet.apply_slurm(u.host, u.data)

    def _jobs(self, u: Update, batch: _Batch) -> None:
        batch.tags |= self.fleet.apply_jobs(u.host, u.data)
        for sink in self.sinks:
            sink.jobs(u.host, u.data)
        batch.listed.add(u.host)

    def _listing(self, u: Update, batch: _Batch) -> None:
        """A `jobs` poll's answer: all the host's jobs, so one listed before and not now was removed
        (`gpudeck rm`): it leaves the fleet, its table row and the header's counts."""
        self._jobs(u, batch)
        batch.tags |= self.fleet.forget_unlisted(u.host, u.data)

    def _polled(self, u: Update, batch: _Batch) -> None:
        kind, gen, error = u.data
        self.polled(u.host, kind, gen, error)

    def _ended(self, active_before: set[str]) -> None:
        # Only jobs this app saw running end here: a replayed journal's old states never show (the
        # fleet keeps the snapshot's state until the journal catches up), so no old ending repeats.
        for job_id in active_before:
            job = self.fleet.jobs.get(job_id)
            if job is not None and not job.active:
                self.app.post_message(JobEnded(job))

    def _summarise(self, job_ids: set[str]) -> None:
        """Ended jobs no view shows, once their journal is read whole (the cost tracker has had every
        record), keep only their summary: history costs memory only while on screen."""
        for job_id in job_ids:
            job = self.fleet.jobs.get(job_id)
            if (
                job is not None
                and not job.active
                and job.caught_up
                and job.has_history
                and not self.tails.keeps_history(job_id)
            ):
                job.drop_history()
