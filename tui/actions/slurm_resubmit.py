"""`restart` and `scale` of a job on a Slurm host (issue 30): a new allocation of the new size that
resumes from the checkpoint. The old job is stopped first (its trainer checkpoints on the stop),
then the login node's agent submits the new one from the old spec (`restart` on node 0, with
`slurm_nodes` for a new size), so the chain is the SSH hosts' one: restart_of, and resized_from
for a resize. While the new allocation is pending, ps shows it "waiting for allocation: REASON";
the old one does not keep running meanwhile: its last steps would be lost to a checkpoint the new
one had already read (README: Slurm clusters)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.spec import ResizedFrom

from ..store import JobRecord, Store
from .agents import Agents
from .launch import LAUNCH_TIMEOUT
from .resize import Scaled, target_count
from .slurm_launch import is_slurm_host


def slurm_host_of(hosts: list[str]) -> str | None:
    """The Slurm host a job runs on (all its nodes are on it), None for any other job."""
    return hosts[0] if hosts and is_slurm_host(hosts[0]) else None


def resubmit(
    agents: Agents,
    store: Store | None,
    host: str,
    job_id: str,
    nodes: int,
    stop: Callable[[], object] | None,
    new_id: str | None = None,
    count: int | None = None,
    why: str | None = None,
) -> tuple[str, str, list[str]]:
    """(new id, its name, its nodes): `stop` (None: the job has ended) ends the old allocation with
    its checkpoint, then the new one is submitted; `count` nodes (None: as many as before)."""
    new_id = new_id or new_job_id()
    if stop is not None:
        stop()
    changes: dict[str, Any] = {}
    if count is not None:
        changes["slurm_nodes"] = count
        changes["resized_from"] = ResizedFrom(job_id, nodes, why or f"scale to {count}").to_wire()
    answer = agents.request(
        host,
        "restart",
        timeout=LAUNCH_TIMEOUT,
        job=job_id,
        node="0",
        new_id=new_id,
        **({"changes": changes} if changes else {}),
    )
    name = str(answer.get("name") or job_id) if isinstance(answer, dict) else job_id
    listed = answer.get("nodes") if isinstance(answer, dict) else None
    new_nodes = (
        [str(n) for n in listed] if isinstance(listed, list) else [str(n) for n in range(count or nodes)]
    )
    argv = answer.get("argv") if isinstance(answer, dict) else None
    if store is not None:
        store.record_job(
            JobRecord(
                id=new_id,
                name=name,
                created_at=time.time(),
                nodes=[{"host": host, "node": n} for n in new_nodes],
                argv=[str(a) for a in argv] if isinstance(argv, list) else [],
                restart_of=job_id,
            )
        )
    return new_id, name, new_nodes


def scale_slurm(
    agents: Agents,
    store: Store | None,
    host: str,
    job_id: str,
    nodes: int,
    count: str,
    stop: Callable[[], object] | None,
    new_id: str | None = None,
    why: str | None = None,
) -> Scaled:
    """`scale ±N`/`N` of a Slurm job: a new allocation of that many nodes, from the checkpoint."""
    n = target_count(count, nodes)
    new_id, name, _ = resubmit(
        agents, store, host, job_id, nodes, stop, new_id, n, why or f"scale {count.strip()}"
    )
    return Scaled(new_id, name, job_id, nodes, n)
