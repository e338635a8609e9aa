"""Which journals the app follows, and how much of each it keeps: live jobs, recent ones and those on
screen are tailed; a view opening a long (or never read) journal asks for its downsampled `series`
first; ended jobs keep their series while among the `kept_ended_jobs` last closed, then go back to
a summary and their tails stop. Blocking calls run through the owner's workers."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.app import App
from textual.worker import Worker

from ..fleet import Fleet, JobModel
from ..live.link import HostLink, LinkDown
from ..live.output_stream import OutputStream
from ..widgets.failures import report

# Finished jobs replayed at start when their agent gives no cost summary (an older one); others: when opened.
TAIL_FINISHED = 20
SERIES_WIDTH = 2000  # points per series asked of the agent's `series` op when a job view opens
SERIES_FROM = 5000  # a running job's view asks for `series` first when its journal is this far behind

InThread = Callable[..., Worker[Any]]


class Tails:
    def __init__(
        self,
        app: App[Any],
        fleet: Fleet,
        links: dict[str, HostLink],
        in_thread: InThread,
        publish: Callable[[set[str]], None],
        kept_ended_jobs: int = 2,
    ) -> None:
        self.app, self.fleet, self.links = app, fleet, links
        self.in_thread, self.publish = in_thread, publish
        self.watched: set[str] = set()  # jobs a screen shows: their journals are tailed, however old
        self.loading: set[tuple[str, str]] = set()  # (job, node) whose `series` answer is awaited
        self.kept_ended_jobs = kept_ended_jobs
        self.closed: list[str] = []  # ended jobs whose view closed, oldest first: their series are kept

    def keeps_history(self, job_id: str) -> bool:
        """A view shows the job, or showed it among the last closed."""
        return job_id in self.watched or job_id in self.closed

    def failed(self, host: str, error: BaseException) -> None:
        if not isinstance(error, LinkDown):
            report(self.app, f"{host}: cannot follow a job", error, "warning")

    def jobs_by_host(self) -> dict[str, list[JobModel]]:
        """Each host's jobs, in jobs_sorted order."""
        by_host: dict[str, list[JobModel]] = {}
        for job in self.fleet.jobs_sorted():
            for host in {n.host for n in job.nodes.values()}:
                by_host.setdefault(host, []).append(job)
        return by_host

    def ensure(self, host: str, jobs: list[JobModel] | None = None) -> None:
        """Follow the journals worth following: live jobs, recent ones, and those on screen.
        `jobs`: the host's jobs in jobs_sorted order, when the caller has them."""
        link = self.links[host]
        if not link.connected:
            return
        if jobs is None:
            jobs = [j for j in self.fleet.jobs_sorted() if host in j.hosts]
        # An ended job whose agent sums it up (`cost_summary`) is not replayed for the counters.
        finished = [j for j in jobs if not j.active and not j.summarised][:TAIL_FINISHED]
        wanted = [j for j in jobs if j.active or j.id in self.watched] + finished
        for job in wanted:
            for node in job.nodes.values():
                key = (job.id, node.node)
                if node.host != host or key in link.tailed or (key in self.loading and not job.active):
                    continue
                if not job.active and node.summarised and node.previewed:
                    continue  # its chart is the agent's series, its costs the summary: no replay (issue 36)
                if (
                    not job.active
                    and node.remote_last_seq is not None
                    and node.last_seq >= node.remote_last_seq
                ):
                    continue  # read whole
                link.tailed.add(key)
                self.in_thread(
                    partial(link.tail, job.id, node.node, node.last_seq),
                    group=f"tail:{host}:{job.id}:{node.node}",
                    failed=partial(self.failed, host),
                )

    def follow_output(self, host: str, stream: OutputStream) -> None:
        """Push a job's output to a view's stream (`follow`), resumed after every reconnect."""
        link = self.links.get(host)
        if link is not None:
            self.in_thread(
                partial(link.follow_output, stream), group=f"output:{host}", failed=partial(self.failed, host)
            )

    def unfollow_output(self, host: str, stream: OutputStream) -> None:
        """The view closed: no more pushes for it (the agent is told in a worker)."""
        link = self.links.get(host)
        if link is not None and self.app.is_running:
            self.in_thread(partial(link.unfollow_output, stream), group=f"output:{host}")

    def watch_job(self, job_id: str) -> None:
        """A view shows the job: its series first, downsampled by the agent, when its journal is long
        or was never read (an ended job is a summary until opened); then its tail as it comes."""
        self.watched.add(job_id)
        if job_id in self.closed:
            self.closed.remove(job_id)
        job = self.fleet.jobs.get(job_id)
        if job is None:
            return
        for node in job.nodes.values():
            link = self.links.get(node.host)
            if link is None or not link.connected:
                continue
            behind = (node.remote_last_seq or 0) - node.last_seq
            if (not job.active and not job.has_history and node.remote_last_seq) or behind >= SERIES_FROM:
                self._load_series(job.id, node.node, node.host)
        for host in job.hosts:
            if host in self.links:
                self.ensure(host)

    def _load_series(self, job_id: str, node: str, host: str) -> None:
        key = (job_id, node)
        if key in self.loading:
            return
        self.loading.add(key)
        fetch = partial(
            self.links[host].request, "series", timeout=120.0, job=job_id, node=node, width=SERIES_WIDTH
        )
        self.in_thread(
            fetch,
            group=f"series:{host}:{job_id}:{node}",
            done=partial(self._series_loaded, host, job_id, node, None),
            failed=lambda error: self._series_loaded(host, job_id, node, error, None),
        )

    def _series_loaded(
        self, host: str, job_id: str, node: str, error: BaseException | None, answer: Any
    ) -> None:
        """On the app thread. A failed `series` (an older agent, a replay) falls back to the tail."""
        self.loading.discard((job_id, node))
        if error is None and job_id in self.watched:  # a view closed meanwhile wants no history
            self.publish(self.fleet.apply_series(host, job_id, node, answer))
        if host in self.links:
            self.ensure(host)

    def unwatch_job(self, job_id: str) -> None:
        """Its view closed. An ended job keeps its series while among the `kept_ended_jobs` last
        closed; older ones go back to a summary, and their tails stop."""
        self.watched.discard(job_id)
        job = self.fleet.jobs.get(job_id)
        if job is None or job.active:
            return
        self.closed.append(job_id)
        while len(self.closed) > self.kept_ended_jobs:
            old = self.fleet.jobs.get(self.closed.pop(0))
            if old is None or old.active or old.id in self.watched:
                continue
            old.drop_history()
            for node in old.nodes.values():
                link = self.links.get(node.host)
                if link is not None and (old.id, node.node) in link.tailed and link.connected:
                    link.tailed.discard((old.id, node.node))
                    self.in_thread(
                        partial(link.request, "untail", job=old.id, node=node.node),
                        group=f"untail:{node.host}:{old.id}:{node.node}",
                        failed=lambda _e: None,
                    )
