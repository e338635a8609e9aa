"""A job's `--data` for its next start (a restart, a resize, an elastic join): each node's sources as
its spec keeps them (the agent's `job_data`), presigned again here (tui/data/renew.py) and sent
beside the request as `data_urls`, as a launch sends them. Asked before anything is stopped, so a
changed object or a store that cannot be reached refuses the action with the job still running."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from remote_agent.spec import DataSource, JobSpec

from ..data.plan import REQUEST_LIMIT, NodeUrls
from ..data.renew import DataRenewal
from ..errors import EXIT_USAGE, GpudeckError
from .agents import Agents


@dataclass(frozen=True)
class NodeData:
    urls: NodeUrls  # the `data_urls` argument ({} for a node without copied data)
    sources: tuple[DataSource, ...] | None = None  # set when the listing changed (--refresh-data)

    def restart_args(self) -> dict[str, Any]:
        """The `restart` op's extra arguments (its `changes` are the caller's: see changes())."""
        return {"data_urls": self.urls} if self.urls else {}

    def changes(self) -> dict[str, Any]:
        return {"data": [s.to_wire() for s in self.sources]} if self.sources is not None else {}


class JobData:
    """One per restart or resize: each prefix listed once for all the job's nodes."""

    def __init__(self, agents: Agents, refresh: bool = False) -> None:
        self.agents = agents
        self.renewal = DataRenewal(refresh)
        self._asked: dict[tuple[str, str, str], tuple[DataSource, ...]] = {}

    def sources(self, host: str, job: str, node: str) -> tuple[DataSource, ...]:
        """The node's sources as its spec keeps them (one round trip, once per node)."""
        key = (host, job, node)
        if key not in self._asked:
            answer = self.agents.request(host, "job_data", job=job, node=node)
            raw = answer.get("data") if isinstance(answer, dict) else None
            self._asked[key] = tuple(
                DataSource.from_wire(s, f"data[{i}]")
                for i, s in enumerate(raw if isinstance(raw, list) else [])
            )
        return self._asked[key]

    def for_restart(self, host: str, job: str, node: str) -> NodeData:
        """URLs for a node restarted from its own spec (and its new listing with `refresh`)."""
        kept = self.sources(host, job, node)
        if not any(s.mode == "copy" for s in kept):
            return NodeData({})
        renewed, urls = self.renewal.renew(kept)
        data = NodeData(urls, renewed if renewed != kept else None)
        check_size(renewed, data)
        return data

    def for_new_node(self, spec: JobSpec, host: str, first: dict[str, Any]) -> tuple[JobSpec, NodeData]:
        """A node on `host`, which the job is not on yet: the job's own sources (from its node
        `first`, a job object) and the host's own; `spec` with them, and their URLs."""
        job_sources = self.sources(str(first["host"]), str(first["id"]), str(first["node"]))
        sources, urls = self.renewal.for_new_host(job_sources, host)
        data = NodeData(urls)
        check_size(sources, data)
        return spec.replace(data=sources), data


def check_size(sources: tuple[DataSource, ...], data: NodeData) -> None:
    """The request must fit serve's line limit, as a launch's must (tui/data/plan.py)."""
    size = len(json.dumps({"data": [s.to_wire() for s in sources], "data_urls": data.urls}))
    if size > REQUEST_LIMIT - 4096:
        raise GpudeckError(
            f"--data: {', '.join(s.url for s in sources)}: too many objects for one request "
            f"({size / 1e6:.1f} MB of listing and URLs); use a narrower prefix, an archive, or :mount",
            EXIT_USAGE,
        )
