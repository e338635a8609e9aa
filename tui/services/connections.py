"""Connections: the app's live link to every host's agent (owned by the App, shown by nobody), and
the TUI's `Agents` for tui/actions.

Connecting runs in one-shot thread workers; the periodic polls (`gpus` ~1 Hz, `jobs`) of all hosts
run on one small pool (live/polls.py) from one schedule ticked by one timer, their outcomes coming
back through the Inbox; each poll is re-armed when its outcome is applied, backing off on failures
with config.toml's `[ssh] backoff_*`; a reconnect bumps the host's generation, so a poll chain from
before it dies. The parts with jobs of their own: intake.py applies the inbox to the fleet,
tails.py follows journals and keeps history, redraw.py throttles `FleetChanged`.
"""

from __future__ import annotations

import contextlib
import time
from functools import partial
from typing import Any

from textual.app import App

from ..errors import GpudeckError
from ..fleet import Fleet, HostStatus
from ..hosts_file import HostsFileError, host_fields
from ..live.inbox import Inbox
from ..live.link import HostLink, LinkDown, TransportFactory
from ..live.output_stream import OutputStream
from ..live.polls import PollPool, PollSchedule
from ..messages import HostKeyChangedNotice, InboxPending
from ..remote.agent_stream import AgentStream
from ..remote.backoff import Backoff
from ..remote.client import AgentError
from ..remote.hostkey_errors import HostKeyChanged as KeyChangedError
from ..settings import SshSettings
from ..widgets.failures import say
from .base import Service
from .intake import Intake, Sink
from .redraw import Redraw
from .tails import Tails

GPU_PERIOD = 1.0
JOBS_PERIOD = 2.0
POLL_TICK = 0.2  # how often the poll schedule is looked at (polls are due at most this late)
SILENT_POLLS = 3  # failed polls in a row on an open pipe before reconnecting
JOB_ANSWERS = frozenset({"launch", "stop", "kill", "restart"})  # ops whose answer is a job object

__all__ = ["Connections", "Sink"]


SLURM_PERIOD = 10.0  # a cluster's partitions and queue: gently (one squeue + sinfo per poll)


def is_slurm(host: str) -> bool:
    """A Slurm login node (hosts.toml `[hosts.NAME.slurm]`): its cluster panel is polled too."""
    try:
        return isinstance(host_fields(host).get("slurm"), dict)
    except (HostsFileError, OSError):
        return False


class Connections(Service):
    def __init__(
        self,
        app: App[Any],
        fleet: Fleet,
        hosts: list[str],
        transport_for: TransportFactory,
        ssh: SshSettings,
        kept_ended_jobs: int = 2,
    ) -> None:
        super().__init__(app)
        self.fleet, self.ssh = fleet, ssh
        self.inbox = Inbox()
        self._transport_for = transport_for
        self.links = {h: HostLink(h, self.inbox, transport_for) for h in hosts}
        self.redraw = Redraw(app, self._changed)
        self.tails = Tails(app, fleet, self.links, self.in_thread, self.publish, kept_ended_jobs)
        self.intake = Intake(app, fleet, self.inbox, self.tails, self.publish, self._polled)
        self.sinks: list[Sink] = self.intake.sinks
        self._backoff: dict[tuple[str, str], Backoff] = {}
        self._gen = dict.fromkeys(hosts, 0)  # bumps on each connect: stale poll chains die
        self._connecting: set[str] = set()
        self._key_warned: set[str] = set()
        self._schedule = PollSchedule()
        self._pool = PollPool(self.inbox)

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

    def stream(self, host: str, argv: list[str]) -> AgentStream:
        link = self.links.get(host)
        if link is None:
            raise GpudeckError(f"unknown host {host!r}")
        try:
            return link.open_stream(argv)
        except (LinkDown, AgentError) as exc:
            raise GpudeckError(f"{host}: {exc}") from None

    def notice(self, line: str) -> None:
        """From a worker: a notification (stderr is Textual's screen)."""
        with contextlib.suppress(RuntimeError):  # the app is closing: nobody to tell
            self.app.call_from_thread(say, self.app, line, "note", "warning")

    # -- what screens ask of it (app thread) ---------------------------------------------------

    def publish(self, tags: set[str]) -> None:
        self.redraw.publish(tags)

    def pending(self) -> None:
        self.intake.pending()

    def drain(self) -> None:
        self.intake.drain()

    def watch_job(self, job_id: str) -> None:
        self.tails.watch_job(job_id)

    def unwatch_job(self, job_id: str) -> None:
        self.tails.unwatch_job(job_id)

    def follow_output(self, host: str, stream: OutputStream) -> None:
        self.tails.follow_output(host, stream)

    def unfollow_output(self, host: str, stream: OutputStream) -> None:
        self.tails.unfollow_output(host, stream)

    def _changed(self, tags: set[str]) -> None:
        if tags & {"job", "state"}:
            self.intake.active = None  # which jobs are active may have changed: counted again

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
        period = {"gpus": GPU_PERIOD, "jobs": JOBS_PERIOD, "slurm": SLURM_PERIOD}.get(kind, 1.0)
        return self._backoff.setdefault(
            (host, kind), Backoff(period=period, first=self.ssh.backoff_initial, cap=self.ssh.backoff_max)
        )

    # -- connecting and polling: one-shot workers re-armed by timers -----------------------------

    def _connect(self, host: str) -> None:
        if host in self._connecting:
            return
        self._connecting.add(host)
        self.in_thread(
            self.links[host].connect,
            group=f"connect:{host}",
            exclusive=True,
            done=lambda _: self._connected(host, None),
            failed=partial(self._connected, host),
        )

    def _tick(self) -> None:
        """Hand the polls now due to the pool (their links block; the app thread never does)."""
        for host, kind, gen in self._schedule.take_due(time.monotonic()):
            if gen != self._gen[host]:
                continue  # a chain from before a reconnect
            link = self.links[host]
            poll = {"gpus": link.poll_gpus, "slurm": link.poll_slurm}.get(kind, link.poll_jobs)
            self._pool.submit(host, kind, gen, poll)

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
            for kind in ("gpus", "jobs", *(("slurm",) if is_slurm(host) else ())):
                self.backoff(host, kind).ok()
                self._arm(host, kind, 0)
            return
        cause = error.__cause__
        if isinstance(cause, KeyChangedError) and host not in self._key_warned:
            self._key_warned.add(host)
            self.app.post_message(HostKeyChangedNotice(host, cause))
        status: HostStatus = "reconnecting" if self.links[host].ever_connected else "unreachable"
        self.publish(self.fleet.set_host_status(host, status, str(error) or "cannot connect"))
        self._arm(host, "connect", backoff.failed())

    def _polled(self, host: str, kind: str, gen: int, error: BaseException | None) -> None:
        """A poll's outcome, on the app thread (drained from the inbox)."""
        if gen != self._gen.get(host):
            return  # from before a reconnect, whose connect re-armed the polls
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
