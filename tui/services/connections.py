"""Connections: the app's live link to every host's agent (owned by the App, shown by nobody).

Blocking work runs in one-shot thread workers (connect, `tail`); the periodic polls (`gpus` ~1 Hz,
`jobs`) of all hosts run on one small pool (live/polls.py) from one schedule ticked by one timer,
their outcomes coming back through the Inbox; each poll is re-armed when its outcome is applied,
backing off on failures with config.toml's `[ssh] backoff_*`.
Results reach the app thread through the Inbox; one coalesced `InboxPending` message drains it into
the Fleet, and `FleetChanged` is posted at most every 0.1 s, so the screens redraw at most ~10
times a second whatever the event rate. It is also the TUI's `Agents` for tui/actions.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from textual.app import App

from ..errors import GpudeckError
from ..fleet import Fleet, JobModel
from ..live.inbox import Inbox
from ..live.link import HostLink, LinkDown, TransportFactory
from ..live.output_stream import OutputStream
from ..live.polls import PollPool, PollSchedule
from ..messages import FleetChanged, HostKeyChanged, InboxPending, JobEnded
from ..remote.backoff import Backoff
from ..remote.client import AgentError
from ..remote.hostkey_errors import HostKeyChanged as KeyChangedError
from ..settings import SshSettings
from ..widgets.failures import report, say
from .base import Service

GPU_PERIOD = 1.0
JOBS_PERIOD = 2.0
MIN_REDRAW = 0.1  # at most ~10 redraws a second
DRAIN_GAP = 0.05  # at most ~20 drains a second: each wake of the loop costs, a batch costs no more
POLL_TICK = 0.2  # how often the poll schedule is looked at (polls are due at most this late)
TAIL_FINISHED = 20  # finished jobs whose journals are replayed at start (others: when opened)
SERIES_WIDTH = 2000  # points per series asked of the agent's `series` op when a job view opens
SERIES_FROM = 5000  # a running job's view asks for `series` first when its journal is this far behind
DRAIN_BUDGET = 1000  # journal records applied per drain: a replay of old journals must not stall keys
SILENT_POLLS = 3  # failed polls in a row on an open pipe before reconnecting
JOB_ANSWERS = frozenset({"launch", "stop", "kill", "restart"})  # ops whose answer is a job object


class Sink(Protocol):
    """Told, on the app thread, what the fleet took in (the cost service is one)."""

    def hello(self, host: str, hello: Any) -> None: ...

    def jobs(self, host: str, jobs: Any) -> None: ...

    def records(self, host: str, job: str, node: str, records: Any, after_seq: int) -> None: ...


class Connections(Service):
    def __init__(self, app: App[Any], fleet: Fleet, hosts: list[str], transport_for: TransportFactory,
                 ssh: SshSettings, kept_ended_jobs: int = 2) -> None:
        super().__init__(app)
        self.fleet, self.ssh = fleet, ssh
        self.inbox = Inbox()
        self._transport_for = transport_for
        self.links = {h: HostLink(h, self.inbox, transport_for) for h in hosts}
        self.watched: set[str] = set()  # jobs a screen shows: their journals are tailed, however old
        self.loading: set[tuple[str, str]] = set()  # (job, node) whose `series` answer is awaited
        self.kept_ended_jobs = kept_ended_jobs
        self._closed: list[str] = []  # ended jobs whose view closed, oldest first: their series are kept
        self.sinks: list[Sink] = []
        self._backoff: dict[tuple[str, str], Backoff] = {}
        self._gen = dict.fromkeys(hosts, 0)  # bumps on each connect: stale poll chains die
        self._connecting: set[str] = set()
        self._key_warned: set[str] = set()
        self._tags: set[str] = set()
        self._last_publish = 0.0
        self._flush_timer: asyncio.TimerHandle | None = None
        self._last_drain = 0.0
        self._drain_timer: asyncio.TimerHandle | None = None
        self._schedule = PollSchedule()
        self._pool = PollPool(self.inbox)
        self._active: set[str] | None = None  # ids of the active jobs as of the last drain; None: count again

    # -- Agents (tui/actions): blocking, from workers ------------------------------------------

    def hosts(self) -> list[str]:
        return list(self.links)

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        link = self.links.get(host)
        if link is None:
            raise GpudeckError(f"unknown host {host!r}")
        try:
            if op in JOB_ANSWERS:  # the fleet takes the answer at once, before the next poll
                return link.job_request(op, timeout=timeout, **args)
            return link.request(op, timeout=timeout, **args)
        except (LinkDown, AgentError) as exc:
            raise GpudeckError(f"{host}: {exc}") from None

    def notice(self, line: str) -> None:
        """From a worker: a notification (stderr is Textual's screen)."""
        with contextlib.suppress(RuntimeError):  # the app is closing: nobody to tell
            self.app.call_from_thread(say, self.app, line, "note", "warning")

    # -- lifecycle (app thread) ----------------------------------------------------------------

    def start(self) -> None:
        self.inbox.set_wake(lambda: self.app.post_message(InboxPending()))
        for host in self.links:
            self.fleet.set_host_status(host, "connecting")
            self._connect(host)
        self.app.set_interval(1.0, lambda: self.publish({"clock"}))  # runtimes and staleness tick
        self.app.set_interval(min(POLL_TICK, GPU_PERIOD, JOBS_PERIOD), self._tick)
        self.publish({"hosts"})

    def add_host(self, host: str) -> None:
        """A host added while the app runs (a cloud launch): linked and connected like the others."""
        if host in self.links:
            return
        self.links[host] = HostLink(host, self.inbox, self._transport_for)
        self._gen[host] = 0
        self.publish(self.fleet.set_host_status(host, "connecting"))
        self._connect(host)

    def stop(self) -> None:
        self._pool.close()
        for link in self.links.values():
            link.close(wait=2.0)  # a healthy agent exits at once; a frozen one must not hold the exit

    def backoff(self, host: str, kind: str) -> Backoff:
        period = {"gpus": GPU_PERIOD, "jobs": JOBS_PERIOD}.get(kind, 1.0)
        return self._backoff.setdefault(
            (host, kind), Backoff(period=period, first=self.ssh.backoff_initial, cap=self.ssh.backoff_max))

    # -- connecting and polling: one-shot workers re-armed by timers -----------------------------

    def _connect(self, host: str) -> None:
        if host in self._connecting:
            return
        self._connecting.add(host)
        self.in_thread(self.links[host].connect, group=f"connect:{host}", exclusive=True,
                       done=lambda _: self._connected(host, None), failed=partial(self._connected, host))

    def _tick(self) -> None:
        """Hand the polls now due to the pool (their links block; the app thread never does)."""
        for host, kind, gen in self._schedule.take_due(time.monotonic()):
            if gen != self._gen[host]:
                continue  # a chain from before a reconnect
            link = self.links[host]
            self._pool.submit(host, kind, gen, link.poll_gpus if kind == "gpus" else link.poll_jobs)

    def _arm(self, host: str, kind: str, delay: float) -> None:
        if kind == "connect":
            fire = partial(self._connect, host)
            if delay > 0:
                self.app.set_timer(delay, fire)
            else:
                fire()  # Textual timers divide by their delay: zero means now
            return
        self._schedule.arm(host, kind, time.monotonic() + delay, self._gen[host])
        if delay <= 0:
            self._tick()

    def _connected(self, host: str, error: BaseException | None) -> None:
        self._connecting.discard(host)
        backoff = self.backoff(host, "connect")
        if error is None:
            backoff.ok()
            self._gen[host] += 1
            self.publish(self.fleet.set_host_status(host, "connected"))
            for kind in ("gpus", "jobs"):
                self.backoff(host, kind).ok()
                self._arm(host, kind, 0)
            return
        cause = error.__cause__
        if isinstance(cause, KeyChangedError) and host not in self._key_warned:
            self._key_warned.add(host)
            self.app.post_message(HostKeyChanged(host, cause))
        status = "reconnecting" if self.links[host].ever_connected else "unreachable"
        self.publish(self.fleet.set_host_status(host, status, str(error) or "cannot connect"))
        self._arm(host, "connect", backoff.failed())

    def _polled(self, host: str, kind: str, error: BaseException | None) -> None:
        """A poll's outcome, on the app thread (drained from the inbox)."""
        backoff = self.backoff(host, kind)
        if error is None:
            if self.fleet.hosts[host].status != "connected":
                self.publish(self.fleet.set_host_status(host, "connected"))
            self._arm(host, kind, backoff.ok())
            return
        self.publish(self.fleet.set_host_status(host, "reconnecting", str(error) or type(error).__name__))
        delay = backoff.failed()
        # A frozen host keeps the pipe open and never answers: after a few silent polls, start over
        # (connect closes the old client first, in its worker).
        if isinstance(error, LinkDown) or not self.links[host].connected or backoff.failures >= SILENT_POLLS:
            self._gen[host] += 1  # both poll chains stop; the connect re-arms them
            self._schedule.drop(host)
            self._arm(host, "connect", delay if backoff.failures >= SILENT_POLLS else 0)
        else:  # slow or refusing, but the pipe is up: retry this poll later
            self._arm(host, kind, delay)

    def _tailed(self, host: str, error: BaseException) -> None:
        if not isinstance(error, LinkDown):
            report(self.app, f"{host}: cannot follow a job", error, "warning")

    # -- applying updates on the app thread ----------------------------------------------------

    def pending(self) -> None:
        """The inbox has news (the app calls this on InboxPending): drained now, or, within DRAIN_GAP
        of the last drain, once when the gap is over (the inbox wakes nobody again until then)."""
        wait = self._last_drain + DRAIN_GAP - time.monotonic()
        if wait <= 0:
            self.drain()
        elif self._drain_timer is None:
            self._drain_timer = self._later(wait, self._timed_drain)

    @staticmethod
    def _later(delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        """A one-shot delay on the app's loop (called on the app thread). A Textual Timer costs a
        task and its messages per use; these fire 10-20 times a second under a fleet."""
        return asyncio.get_running_loop().call_later(delay, callback)

    def _timed_drain(self) -> None:
        # Through the app's guarded handler, like every drain: bad data becomes a note, not a crash.
        self._drain_timer = None
        self._last_drain = 0.0
        self.app.post_message(InboxPending())

    def drain(self) -> None:
        """Apply what the inbox holds to the fleet."""
        self._last_drain = time.monotonic()
        fleet = self.fleet
        updates = self.inbox.take(DRAIN_BUDGET)
        if self._active is None:  # counted again only after a job came or changed state
            self._active = {j.id for j in fleet.jobs.values() if j.active}
        active_before = self._active
        tags: set[str] = set()
        polled: set[str] = set()
        fed: set[str] = set()
        for u in updates:
            if u.kind == "events" and u.job and u.node:
                fed.add(u.job)
                after = fleet.last_seq(u.job, u.node)
                tags |= fleet.apply_events(u.host, u.job, u.node, u.data)
                for sink in self.sinks:
                    sink.records(u.host, u.job, u.node, u.data, after)
            elif u.kind == "gpus":
                tags |= fleet.apply_gpus(u.host, u.data)
            elif u.kind == "hello":
                tags |= fleet.apply_hello(u.host, u.data)
                for sink in self.sinks:
                    sink.hello(u.host, u.data)
            elif u.kind == "jobs":
                tags |= fleet.apply_jobs(u.host, u.data)
                for sink in self.sinks:
                    sink.jobs(u.host, u.data)
                polled.add(u.host)
            elif u.kind == "polled":
                kind, gen, error = u.data
                if gen == self._gen.get(u.host):  # else: from before a reconnect, whose connect re-armed
                    self._polled(u.host, kind, error)
        # Only jobs this app saw running end here: a replayed journal's old states never show (the
        # fleet keeps the snapshot's state until the journal catches up), so no old ending repeats.
        for job_id in active_before:
            job = fleet.jobs.get(job_id)
            if job is not None and not job.active:
                self.app.post_message(JobEnded(job))
        self._summarise(fed | {j for j in active_before if j in fleet.jobs})
        if polled:
            by_host = self._jobs_by_host()  # once per drain, not per host: 64 hosts × 500 jobs add up
            for host in polled:
                self._ensure_tails(host, by_host.get(host, []))
        self.publish(tags)
        if len(self.inbox):  # more than one drain's worth: the rest after the keys waiting now, no gap
            self._last_drain = 0.0
            self.app.post_message(InboxPending())

    def _summarise(self, job_ids: set[str]) -> None:
        """Ended jobs no view shows, once their journal is read whole (the cost tracker has had every
        record), keep only their summary: history costs memory only while on screen."""
        for job_id in job_ids:
            job = self.fleet.jobs.get(job_id)
            if (job is not None and not job.active and job.caught_up and job.has_history
                    and job_id not in self.watched and job_id not in self._closed):
                job.drop_history()

    def _jobs_by_host(self) -> dict[str, list[JobModel]]:
        """Each host's jobs, in jobs_sorted order."""
        by_host: dict[str, list[JobModel]] = {}
        for job in self.fleet.jobs_sorted():
            for host in {n.host for n in job.nodes.values()}:
                by_host.setdefault(host, []).append(job)
        return by_host

    def _ensure_tails(self, host: str, jobs: list[JobModel] | None = None) -> None:
        """Follow the journals worth following: live jobs, recent ones, and those on screen.
        `jobs`: the host's jobs in jobs_sorted order, when the caller has them."""
        link = self.links[host]
        if not link.connected:
            return
        if jobs is None:
            jobs = [j for j in self.fleet.jobs_sorted() if host in j.hosts]
        finished = [j for j in jobs if not j.active][:TAIL_FINISHED]
        wanted = [j for j in jobs if j.active or j.id in self.watched] + finished
        for job in wanted:
            for node in job.nodes.values():
                key = (job.id, node.node)
                if node.host != host or key in link.tailed or (key in self.loading and not job.active):
                    continue
                complete = not job.active and node.remote_last_seq is not None and node.last_seq >= node.remote_last_seq
                if complete:
                    continue
                link.tailed.add(key)
                self.in_thread(partial(link.tail, job.id, node.node, node.last_seq),
                               group=f"tail:{host}:{job.id}:{node.node}", failed=partial(self._tailed, host))

    def follow_output(self, host: str, stream: OutputStream) -> None:
        """Push a job's output to a view's stream (`follow`), resumed after every reconnect."""
        link = self.links.get(host)
        if link is not None:
            self.in_thread(partial(link.follow_output, stream), group=f"output:{host}",
                           failed=partial(self._tailed, host))

    def unfollow_output(self, host: str, stream: OutputStream) -> None:
        """The view closed: no more pushes for it (the agent is told in a worker)."""
        link = self.links.get(host)
        if link is not None and self.app.is_running:
            self.in_thread(partial(link.unfollow_output, stream), group=f"output:{host}")

    def watch_job(self, job_id: str) -> None:
        """A view shows the job: its series first, downsampled by the agent, when its journal is long
        or was never read (an ended job is a summary until opened); then its tail as it comes."""
        self.watched.add(job_id)
        if job_id in self._closed:
            self._closed.remove(job_id)
        job = self.fleet.jobs.get(job_id)
        for node in job.nodes.values() if job else ():
            link = self.links.get(node.host)
            if link is None or not link.connected:
                continue
            behind = (node.remote_last_seq or 0) - node.last_seq
            if (not job.active and not job.has_history and node.remote_last_seq) or behind >= SERIES_FROM:
                self._load_series(job.id, node.node, node.host)
        for host in job.hosts if job else ():
            if host in self.links:
                self._ensure_tails(host)

    def _load_series(self, job_id: str, node: str, host: str) -> None:
        key = (job_id, node)
        if key in self.loading:
            return
        self.loading.add(key)
        fetch = partial(self.links[host].request, "series", timeout=120.0, job=job_id, node=node, width=SERIES_WIDTH)
        self.in_thread(fetch, group=f"series:{host}:{job_id}:{node}",
                       done=partial(self._series_loaded, host, job_id, node, None),
                       failed=lambda error: self._series_loaded(host, job_id, node, error, None))

    def _series_loaded(self, host: str, job_id: str, node: str, error: BaseException | None, answer: Any) -> None:
        """On the app thread. A failed `series` (an older agent, a replay) falls back to the tail."""
        self.loading.discard((job_id, node))
        if error is None and job_id in self.watched:  # a view closed meanwhile wants no history
            self.publish(self.fleet.apply_series(host, job_id, node, answer))
        if host in self.links:
            self._ensure_tails(host)

    def unwatch_job(self, job_id: str) -> None:
        """Its view closed. An ended job keeps its series while among the `kept_ended_jobs` last
        closed; older ones go back to a summary, and their tails stop."""
        self.watched.discard(job_id)
        job = self.fleet.jobs.get(job_id)
        if job is None or job.active:
            return
        self._closed.append(job_id)
        while len(self._closed) > self.kept_ended_jobs:
            old = self.fleet.jobs.get(self._closed.pop(0))
            if old is None or old.active or old.id in self.watched:
                continue
            old.drop_history()
            for node in old.nodes.values():
                link = self.links.get(node.host)
                if link is not None and (old.id, node.node) in link.tailed and link.connected:
                    link.tailed.discard((old.id, node.node))
                    self.in_thread(partial(link.request, "untail", job=old.id, node=node.node),
                                   group=f"untail:{node.host}:{old.id}:{node.node}", failed=lambda _e: None)

    def publish(self, tags: set[str]) -> None:
        """Say the fleet changed, at most every MIN_REDRAW seconds (tags accumulate meanwhile)."""
        if tags & {"job", "state"}:
            self._active = None  # which jobs are active may have changed
        self._tags |= tags
        if not self._tags or self._flush_timer is not None:
            return
        wait = self._last_publish + MIN_REDRAW - time.monotonic()
        if wait > 0:
            self._flush_timer = self._later(wait, self._flush)
        else:
            self._flush()

    def _flush(self) -> None:
        self._flush_timer = None
        tags, self._tags = frozenset(self._tags), set()
        self._last_publish = time.monotonic()
        if tags:
            self.app.post_message(FleetChanged(tags))
