"""A resize whose new job fails within its start-up window is rolled back to the old size from the
same checkpoint (issue 29, finding 12: 2 → 3 nodes failed at once, the old job was already stopped,
and nothing ran). The window closes early once the new job's first node reports a metric."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ..errors import GpudeckError
from .agents import Agents

STARTUP_WINDOW = 10.0  # seconds from the relaunch: a failure this early is the resize's doing
POLL = 0.25


def _nodes_now(agents: Agents, job_id: str, hosts: set[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for host in sorted(hosts):
        try:
            jobs = agents.request(host, "jobs")["jobs"]
        except GpudeckError:
            continue  # a host that does not answer now says nothing about a failure
        out.extend(dict(j, host=host) for j in jobs if isinstance(j, dict) and j.get("id") == job_id)
    return out


def failed_at_start(
    agents: Agents, job_id: str, nodes: Sequence[tuple[str, str]], window: float = STARTUP_WINDOW
) -> str | None:
    """Why a node of the new job failed within `window`, or None: it trains (a metric on its first
    node), it ended otherwise (a stop, an exit 0), or the window passed."""
    deadline = time.monotonic() + window
    hosts = {h for h, _ in nodes}
    while time.monotonic() < deadline:
        now = _nodes_now(agents, job_id, hosts)
        failed = [n for n in now if n.get("state") == "failed"]
        if failed:
            n = failed[0]
            why = n.get("cause") or f"exit code {n.get('exit_code')}"
            return f"node {n.get('node')} on {n['host']}: {why}"
        if now and all(n.get("state") in ("exited", "stopped", "killed") for n in now):
            return None
        if any(n.get("node") == "0" and n.get("last") for n in now):
            return None
        time.sleep(POLL)
    return None


def rollback_onto(old_hosts: Sequence[str], new_hosts: Sequence[str]) -> tuple[str, ...]:
    """The old hosts the rolled-back job needs again (a shrink that failed dropped their nodes)."""
    left = list(new_hosts)
    onto = []
    for h in old_hosts:
        if h in left:
            left.remove(h)
        else:
            onto.append(h)
    return tuple(onto)
