"""The job view's pace of a multi-node job (issue 34): each node's step rate and GPU use over the
newest window and the straggler, judged as `ps` judges them (remote_agent/pace/straggler.py), from
the points the model folded per node, each on its own host's clock."""

from __future__ import annotations

from typing import NamedTuple

from remote_agent.pace.straggler import NodePace, Straggler, judge, latest, settings

from .hosts import HostModel
from .jobs import JobModel


class JobPace(NamedTuple):
    rates: dict[str, tuple[float | None, float | None]]  # node -> (steps/s, GPU %)
    stragglers: list[Straggler]


def job_pace(job: JobModel, hosts: dict[str, HostModel], now: float) -> JobPace:
    """`now` is the client's clock; each node's host time is now + its host's clock offset."""
    nodes = []
    for n in job.nodes.values():
        if n.state != "running":
            continue
        host = hosts.get(n.host)
        host_now = now + (host.clock_offset if host else 0.0)
        nodes.append(NodePace(n.node, host_now, n.pace_steps, n.pace_util))
    s = settings()
    found = judge(nodes, s) if job.active and len(nodes) == len(job.nodes) >= 2 else []
    return JobPace(latest(nodes, s), found)
