"""Fills a Snapshot from every host the client knows (`gpus` and `jobs`, as `hosts` and `ps` ask),
and keeps it for a moment so that many scrapes cost one round of requests."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from remote_agent.exporter.hostdata import gpus_held, point_of
from remote_agent.exporter.snapshot import Gpu, Host, JobPoint, Snapshot, number

from ..actions.agents import Agents
from ..actions.find import Job, list_jobs
from ..errors import GpudeckError


def host_sample(agents: Agents, host: str) -> Host:
    try:
        sample = agents.request(host, "gpus", timeout=10.0)
    except GpudeckError:
        return Host(host, up=False)
    gpus = sample.get("gpus") if isinstance(sample, dict) else None
    return Host(host, up=True, gpus=[Gpu.from_sample(g) for g in gpus or [] if isinstance(g, dict)])


def node_gpus(node: dict[str, Any], hosts: dict[str, Host]) -> int:
    """The GPUs a node holds: those its host gave it (--gpus), else every GPU of its host."""
    host = hosts.get(str(node.get("host")))
    return gpus_held(node, len(host.gpus) if host is not None else 0)


def job_point(job: Job, hosts: dict[str, Host], now: float) -> JobPoint:
    last = job.lead.get("last") or {}
    host = str(job.lead.get("host"))
    return point_of(job.id, job.name, host, job.state, last, job.nodes, lambda n: node_gpus(n, hosts), now)


def gather(agents: Agents, keep_ended_s: float, now: float | None = None) -> Snapshot:
    """Every host's GPUs and every job; a job that ended more than `keep_ended_s` ago is left out,
    so the series count stays bounded however many jobs a host keeps."""
    names = agents.hosts()
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(names)))) as pool:
        samples = list(pool.map(lambda h: host_sample(agents, h), names))
    hosts = {h.name: h for h in samples}
    skipped: list[GpudeckError] = []  # a host down is gpudeck_host_up 0, not a line per scrape
    jobs = list_jobs(agents, skipped, hosts=[h.name for h in samples if h.up])
    now = time.time() if now is None else now
    kept = []
    for job in jobs:
        ended_at = number(job.to_json()["ended_at"]) if job.ended else None
        if job.ended and ended_at is not None and now - ended_at > keep_ended_s:
            continue
        kept.append(job_point(job, hosts, now))
    return Snapshot(samples, kept)


class CachedSnapshot:
    """The last Snapshot for `ttl_s`: scrapes in between get it as is; one scrape gathers at a time."""

    def __init__(self, agents: Agents, keep_ended_s: float, ttl_s: float = 1.5) -> None:
        self.agents, self.keep_ended_s, self.ttl_s = agents, keep_ended_s, ttl_s
        self._lock = threading.Lock()
        self._at = float("-inf")
        self._text = ""

    def text(self, render: Any) -> str:
        with self._lock:
            if time.monotonic() - self._at >= self.ttl_s:
                self._text = render(gather(self.agents, self.keep_ended_s))
                self._at = time.monotonic()
            return self._text
