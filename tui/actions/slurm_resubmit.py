"""`restart` and `scale` of a job on a Slurm host (issue 30): a new allocation of the new size that
resumes from the checkpoint. The old job is stopped first (its trainer checkpoints on the stop),
then the login node's agent submits the new one from the old spec (`restart` on node 0, with
`slurm_nodes` for a new size), so the chain is the SSH hosts' one: restart_of, and resized_from
for a resize. While the new allocation is pending, ps shows it "waiting for allocation: REASON";
the old one does not keep running meanwhile: its last steps would be lost to a checkpoint the new
one had already read (README: Slurm clusters).

Guarded as every resize is (tui/actions/transition.py): the job-level claim first, then the new
batch tried with `sbatch --test-only` (the `slurm` op's `preflight`) before anything stops, and a
submission refused after the stop rolls back: the claim let go, nothing of the new job kept, and
the old job's record names the refusal (`slurm.resubmit`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.spec import ResizedFrom

from ..errors import GpudeckError
from ..store import JobRecord, Store
from .agents import Agents
from .launch import LAUNCH_TIMEOUT
from .resize import Scaled, target_count
from .slurm_launch import is_slurm_host
from .transition import Claim, stop_relaunched


def slurm_host_of(hosts: list[str]) -> str | None:
    """The Slurm host a job runs on (all its nodes are on it), None for any other job."""
    return hosts[0] if hosts and is_slurm_host(hosts[0]) else None


def preflight(agents: Agents, host: str, job_id: str, count: int | None, verb: str) -> str:
    """Slurm's word on the new allocation (`sbatch --test-only`); GpudeckError when it is refused."""
    try:
        answer = agents.request(host, "slurm", preflight={"job": job_id, "nodes": count})
    except GpudeckError as exc:
        raise GpudeckError(f"{verb}: {job_id} keeps running as it is: {exc}", exc.code) from None
    return str(answer.get("said") or "") if isinstance(answer, dict) else ""


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
    verb = "restart" if count is None else "scale"
    what = "restart" if count is None else "resize"
    claim = Claim.begin(agents, job_id, [(host, "0")], what, new_id, verb)
    changes: dict[str, Any] = {}
    if count is not None:
        changes["slurm_nodes"] = count
        changes["resized_from"] = ResizedFrom(job_id, nodes, why or f"scale to {count}").to_wire()
    try:
        preflight(agents, host, job_id, count, verb)  # refused: nothing was stopped
        if stop is not None:
            stop()
        claim.check()  # a user's stop that came meanwhile wins: no new allocation
        try:
            answer = agents.request(
                host,
                "restart",
                timeout=LAUNCH_TIMEOUT,
                job=job_id,
                node="0",
                new_id=new_id,
                **({"changes": changes} if changes else {}),
            )
        except GpudeckError as exc:
            raise GpudeckError(
                f"{verb}: {job_id} ended, but its new allocation was refused ({exc}); nothing of "
                f"{new_id} is left and {job_id}'s record says so: `gpudeck restart {job_id}` tries again",
                exc.code,
            ) from None
    except BaseException:
        claim.abort()
        raise
    name = str(answer.get("name") or job_id) if isinstance(answer, dict) else job_id
    listed = answer.get("nodes") if isinstance(answer, dict) else None
    new_nodes = (
        [str(n) for n in listed] if isinstance(listed, list) else [str(n) for n in range(count or nodes)]
    )
    if not claim.commit():
        stop_relaunched(agents, new_id, name, [(host, n) for n in new_nodes])
        raise GpudeckError(f"{verb}: {job_id} was stopped during the {verb}: {new_id} was stopped too")
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
