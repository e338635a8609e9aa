"""FleetFeed: the live glue between the hosts' agents and the app (a widget that never shows).

Blocking work runs in one-shot thread workers (connect, poll `gpus` ~1 Hz, poll `jobs`, `tail`,
actions), each re-armed by a timer when it ends, backing off on failures. Results reach the app
thread through the Inbox; one coalesced `Pending` message drains it into the Fleet, and `Changed`
is posted at most every 0.1 s, so the screen redraws at most ~10 times a second whatever the
event rate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from textual.app import ComposeResult
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from remote_agent.names import new_job_id

from ..fleet import Fleet, JobModel
from ..live import actions
from ..live.backoff import Backoff
from ..live.inbox import Inbox
from ..live.link import HostLink, LinkDown, TransportFactory
from ..store import Store
from .cost_feed import CostFeed
from .failures import guarded, report

GPU_PERIOD = 1.0
JOBS_PERIOD = 2.0
MIN_REDRAW = 0.1  # at most ~10 redraws a second
TAIL_FINISHED = 20
SILENT_POLLS = 3  # failed polls in a row on an open pipe before reconnecting  # finished jobs whose journals are replayed at start (others: when opened)


class FleetFeed(Widget):
    DEFAULT_CSS = "FleetFeed { display: none; }"

    class Pending(Message, bubble=False):
        """Something arrived in the inbox. Replaces an undelivered one: a burst is one drain."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, FleetFeed.Pending)

    class Changed(Message):
        """The fleet changed; tags say what (the Fleet's change tags, plus "clock" each second)."""

        def __init__(self, tags: frozenset[str]) -> None:
            super().__init__()
            self.tags = tags

    class KeyChanged(Message):
        """A host's SSH key changed: the app warns once; the UI can never accept it."""

        def __init__(self, host: str, error: BaseException) -> None:
            super().__init__()
            self.host, self.error = host, error

    class JobEnded(Message):
        def __init__(self, job: JobModel) -> None:
            super().__init__()
            self.job = job

    def __init__(self, fleet: Fleet, hosts: list[str], transport_for: TransportFactory,
                 store: Callable[[], Store | None] | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fleet = fleet
        self.inbox = Inbox()
        self.links = {h: HostLink(h, self.inbox, transport_for) for h in hosts}
        self.watched: set[str] = set()  # jobs a screen shows: their journals are tailed, however old
        self._store_factory = store
        self._store: Store | None = None
        self._store_lock = threading.Lock()  # two action workers may open it at once
        self._backoff: dict[tuple[str, str], Backoff] = {}
        self._gen = dict.fromkeys(hosts, 0)  # bumps on each connect: stale poll chains die
        self._connecting: set[str] = set()
        self._key_warned: set[str] = set()
        self._tags: set[str] = set()
        self._last_publish = 0.0
        self._flush_timer: Timer | None = None
        # Live cost counters; the ledger (state.db) only where the app keeps one.
        self.costs = CostFeed(fleet, lambda job: self.end(job, "stop", "fleet daily budget reached"), self._publish, ledger=store is not None)

    def compose(self) -> ComposeResult:
        yield self.costs

    # -- lifecycle -------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.inbox.set_wake(lambda: self.post_message(self.Pending()))
        for host in self.links:
            self.fleet.set_host_status(host, "connecting")
            self._connect(host)
        self.set_interval(1.0, lambda: self._publish({"clock"}))  # runtimes and staleness tick
        self._publish({"hosts"})

    def on_unmount(self) -> None:
        for link in self.links.values():
            link.close(wait=2.0)  # a healthy agent exits at once; a frozen one must not hold the exit
        if self._store is not None:
            self._store.close()

    @property
    def store(self) -> Store | None:
        """The state.db index, opened on first use (from a worker: opening it is IO)."""
        with self._store_lock:
            if self._store is None and self._store_factory is not None:
                self._store = self._store_factory()
            return self._store

    # -- polling: one-shot workers re-armed by timers ------------------------------------------

    def _backoff_for(self, host: str, kind: str) -> Backoff:
        period = {"gpus": GPU_PERIOD, "jobs": JOBS_PERIOD}.get(kind, 1.0)
        return self._backoff.setdefault((host, kind), Backoff(period=period))

    def _connect(self, host: str) -> None:
        if host in self._connecting:
            return
        self._connecting.add(host)
        self.run_worker(self.links[host].connect, name=f"connect:{host}", group=f"connect:{host}",
                        thread=True, exclusive=True, exit_on_error=False)

    def _poll(self, host: str, kind: str, gen: int) -> None:
        if gen != self._gen[host] or not self.is_attached:
            return  # a chain from before a reconnect
        link = self.links[host]
        fn = link.poll_gpus if kind == "gpus" else link.poll_jobs
        self.run_worker(fn, name=f"{kind}:{host}:{gen}", group=f"{kind}:{host}", thread=True,
                        exclusive=True, exit_on_error=False)

    def _arm(self, host: str, kind: str, delay: float) -> None:
        if kind == "connect":
            fire = partial(self._connect, host)
        else:
            fire = partial(self._poll, host, kind, self._gen[host])
        if delay > 0:
            self.set_timer(delay, fire)
        else:
            fire()  # Textual timers divide by their delay: zero means now

    @guarded("background task")
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        kind, _, rest = (worker.name or "").partition(":")
        ok = event.state == WorkerState.SUCCESS
        if kind == "action":
            if ok:
                self.notify(str(worker.result), title=rest)
            else:
                report(self, f"{rest} failed", worker.error or "unknown error")
            return
        host = rest.split(":", 1)[0]
        if host not in self.links:
            return
        if kind == "connect":
            self._connected(host, ok, worker.error)
        elif kind in ("gpus", "jobs"):
            self._polled(host, kind, ok, worker.error)
        elif kind == "tail" and not ok and not isinstance(worker.error, LinkDown):
            report(self, f"{host}: cannot follow a job", worker.error or "unknown error", "warning")

    def _connected(self, host: str, ok: bool, error: BaseException | None) -> None:
        self._connecting.discard(host)
        backoff = self._backoff_for(host, "connect")
        if ok:
            backoff.ok()
            self._gen[host] += 1
            self._publish(self.fleet.set_host_status(host, "connected"))
            for kind in ("gpus", "jobs"):
                self._backoff_for(host, kind).ok()
                self._arm(host, kind, 0)
            return
        link = self.links[host]
        cause = error.__cause__ if error is not None else None
        if type(cause).__name__ == "HostKeyChanged" and host not in self._key_warned:
            self._key_warned.add(host)  # by name: importing paramiko here would slow every start
            self.post_message(self.KeyChanged(host, cause))
        status = "reconnecting" if link.ever_connected else "unreachable"
        self._publish(self.fleet.set_host_status(host, status, str(error) or "cannot connect"))
        self._arm(host, "connect", backoff.failed())

    def _polled(self, host: str, kind: str, ok: bool, error: BaseException | None) -> None:
        backoff = self._backoff_for(host, kind)
        if ok:
            if self.fleet.hosts[host].status != "connected":
                self._publish(self.fleet.set_host_status(host, "connected"))
            self._arm(host, kind, backoff.ok())
            return
        reason = str(error) or type(error).__name__
        self._publish(self.fleet.set_host_status(host, "reconnecting", reason))
        delay = backoff.failed()
        # A frozen host keeps the pipe open and never answers: after a few silent polls, start over
        # (connect closes the old client first, in its worker).
        if isinstance(error, LinkDown) or not self.links[host].connected or backoff.failures >= SILENT_POLLS:
            self._gen[host] += 1  # both poll chains stop; the connect re-arms them
            self._arm(host, "connect", delay if backoff.failures >= SILENT_POLLS else 0)
        else:  # slow or refusing, but the pipe is up: retry this poll later
            self._arm(host, kind, delay)

    # -- applying updates on the app thread ----------------------------------------------------

    def on_fleet_feed_pending(self, _: FleetFeed.Pending) -> None:
        self._drain()

    @guarded("fleet update")
    def _drain(self) -> None:
        fleet = self.fleet
        active_before = {j.id for j in fleet.jobs.values() if j.active}
        tags: set[str] = set()
        polled: set[str] = set()
        for u in self.inbox.drain():
            if u.kind == "events" and u.job and u.node:
                after = fleet.last_seq(u.job, u.node)
                tags |= fleet.apply_events(u.host, u.job, u.node, u.data)
                self.costs.records(u.host, u.job, u.node, u.data, after)
            elif u.kind == "gpus":
                tags |= fleet.apply_gpus(u.host, u.data)
            elif u.kind == "hello":
                tags |= fleet.apply_hello(u.host, u.data)
                self.costs.hello(u.host, u.data)
            elif u.kind == "jobs":
                tags |= fleet.apply_jobs(u.host, u.data)
                self.costs.jobs(u.host, u.data)
                polled.add(u.host)
        for job_id in active_before:
            job = fleet.jobs.get(job_id)
            if job is not None and not job.active:
                self.post_message(self.JobEnded(job))
        for host in polled:
            self._ensure_tails(host)
        self._publish(tags)

    def _ensure_tails(self, host: str) -> None:
        """Follow the journals worth following: live jobs, recent ones, and those on screen."""
        link = self.links[host]
        if not link.connected:
            return
        jobs = [j for j in self.fleet.jobs_sorted() if host in j.hosts]
        finished = [j for j in jobs if not j.active][:TAIL_FINISHED]
        wanted = [j for j in jobs if j.active or j.id in self.watched] + finished
        for job in wanted:
            for node in job.nodes.values():
                key = (job.id, node.node)
                if node.host != host or key in link.tailed:
                    continue
                complete = not job.active and node.remote_last_seq is not None and node.last_seq >= node.remote_last_seq
                if complete:
                    continue
                link.tailed.add(key)
                self.run_worker(partial(link.tail, job.id, node.node, node.last_seq), name=f"tail:{host}",
                                group=f"tail:{host}:{job.id}:{node.node}", thread=True, exit_on_error=False)

    def watch_job(self, job_id: str) -> None:
        self.watched.add(job_id)
        job = self.fleet.jobs.get(job_id)
        for host in job.hosts if job else ():
            if host in self.links:
                self._ensure_tails(host)

    def _publish(self, tags: set[str]) -> None:
        self._tags |= tags
        if not self._tags or self._flush_timer is not None:
            return
        wait = self._last_publish + MIN_REDRAW - time.monotonic()
        if wait > 0:
            self._flush_timer = self.set_timer(wait, self._flush)
        else:
            self._flush()

    def _flush(self) -> None:
        self._flush_timer = None
        tags, self._tags = frozenset(self._tags), set()
        self._last_publish = time.monotonic()
        if tags:
            self.post_message(self.Changed(tags))

    # -- actions (blocking parts in tui.live.actions, run in thread workers) --------------------

    def _action(self, title: str, fn: Callable[[], Any]) -> None:
        self.run_worker(fn, name=f"action:{title}", group="action", thread=True, exit_on_error=False)

    def launch(self, host: str, spec: dict[str, Any]) -> None:
        self._action("launch", lambda: actions.launch(self.links, self.store, host, spec))

    def end(self, job: JobModel, action: str, reason: str | None = None) -> None:
        self._action(action, partial(actions.end, self.links, actions.JobTarget.of(job), action, reason))

    def restart(self, job: JobModel) -> str:
        """Returns the new job's id (chosen here, so the caller can select it when it appears)."""
        target, new_id = actions.JobTarget.of(job), new_job_id()
        self._action("restart", lambda: actions.restart(self.links, self.store, target, new_id))
        return new_id
