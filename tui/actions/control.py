"""Stop, kill, restart, remove and pause a job's idle stop: on every node, the same for the CLI and
the TUI. Each blocks until the agents answer (call from a worker); each returns what happened."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.spec import DEFAULT_GRACE

from ..errors import GpudeckError
from ..fleet.jobs import JobModel
from ..fleet.states import ENDED, job_state, left_job
from ..fleet.watch import WatchInfo
from ..store import JobRecord, Store
from .agents import Agents
from .find import Job
from .jobdata import JobData
from .launch import LAUNCH_TIMEOUT
from .options import check_grace
from .slurm_resubmit import resubmit, slurm_host_of
from .transition import Claim, mark, stop_relaunched
from .watch import refuse_on_watch

# The agent answers a stop once the job's tree is gone: after the grace period at most, plus the
# time SIGKILL and the reaping take. Waiting less would report a slow stop as failed.
STOP_MARGIN = 60.0


@dataclass(frozen=True)
class NodeTarget:
    host: str
    node: str
    grace: float | None = None  # the node's spec's; None: not known (the agent's default applies)


@dataclass(frozen=True)
class JobTarget:
    """What an action needs of a job, copied where it was found (the TUI's model keeps changing on
    the app thread while the action's worker runs)."""

    id: str
    label: str
    state: str
    nodes: tuple[NodeTarget, ...]
    watch: WatchInfo | None = None  # a watched run (gpudeck watch): read-only without its pid

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @classmethod
    def of_job(cls, job: Job) -> JobTarget:
        nodes = tuple(NodeTarget(n["host"], n["node"], _seconds(n.get("grace"))) for n in job.nodes)
        return cls(job.id, job.name or job.id, job.state, nodes, WatchInfo.of(job.first.get("watch")))

    @classmethod
    def of_model(cls, job: JobModel) -> JobTarget:
        nodes = tuple(NodeTarget(n.host, n.node, n.grace) for n in job.nodes.values())
        return cls(job.id, job.name or job.id, job.state, nodes, job.watch)


def _seconds(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else None


def stop_wait(job: JobTarget, grace: float | None = None) -> float:
    """How long to wait for a stop's answer: the grace that applies, plus STOP_MARGIN."""
    if grace is None:
        grace = max(
            (n.grace if n.grace is not None else DEFAULT_GRACE for n in job.nodes), default=DEFAULT_GRACE
        )
    return grace + STOP_MARGIN


def end(
    agents: Agents,
    job: JobTarget,
    action: str,
    grace: float | None = None,
    reason: str | None = None,
    resizing: bool = False,
) -> list[dict[str, Any]]:
    """Stop (graceful; `grace` overrides the spec's) or kill every node; returns the nodes' final
    job objects once the agents say every tree is gone. Any end but a resize's own (`resizing`)
    wins over a resize or restart under way: it does not relaunch (tui/actions/transition.py)."""
    if action not in ("stop", "kill"):
        raise ValueError(action)
    refuse_on_watch(job.watch, action, job.id)
    check_grace(grace)
    if not resizing and job.nodes:
        with contextlib.suppress(GpudeckError):  # a host that is down: the stop goes on without it
            mark(agents, job.id, [(n.host, n.node) for n in job.nodes], "stop")
    extra: dict[str, Any] = {}
    if action == "stop":
        extra = {k: v for k, v in (("grace", grace), ("reason", reason)) if v is not None}
    wait = stop_wait(job, grace if action == "stop" else 0.0)

    def one(n: NodeTarget) -> dict[str, Any]:
        answer: dict[str, Any] = agents.request(
            n.host, action, timeout=wait, job=job.id, node=n.node, **extra
        )
        return answer  # the agent's job object

    if len(job.nodes) == 1:
        return [one(job.nodes[0])]
    # Every node at once: a multi-node job's ranks stop together (one grace period, not one per node).
    with ThreadPoolExecutor(max_workers=min(16, len(job.nodes))) as pool:
        return list(pool.map(one, job.nodes))


def restart(
    agents: Agents,
    store: Store | None,
    job: JobTarget,
    new_id: str | None = None,
    refresh_data: bool = False,
) -> str:
    """A new job from the same spec (restart_of recorded), on the same nodes; a job that may still
    run is stopped first. Its `--data` is presigned again (the launch's listing; with
    `refresh_data` the current one) before anything stops. Returns the new job's id."""
    refuse_on_watch(job.watch, "restart", job.id)
    cluster = slurm_host_of([n.host for n in job.nodes])
    if cluster is not None:  # a new allocation from the checkpoint (tui/actions/slurm_resubmit.py)
        stop = None if job.ended else (lambda: end(agents, job, "stop", reason="restart", resizing=True))
        return resubmit(agents, store, cluster, job.id, len(job.nodes), stop, new_id)[0]
    data = JobData(agents, refresh_data)
    renewed = {n.node: data.for_restart(n.host, job.id, n.node) for n in job.nodes}
    new_id = new_id or new_job_id()
    nodes = [(n.host, n.node) for n in job.nodes]
    claim = Claim.begin(agents, job.id, nodes, "restart", new_id, "restart")  # one change at a time
    try:
        if not job.ended:
            end(agents, job, "stop", reason="restart", resizing=True)
        claim.check()  # a stop that arrived meanwhile wins
        answers = [
            agents.request(
                n.host,
                "restart",
                timeout=LAUNCH_TIMEOUT,
                job=job.id,
                node=n.node,
                new_id=new_id,
                **renewed[n.node].restart_args(),
                **({"changes": renewed[n.node].changes()} if renewed[n.node].changes() else {}),
            )
            for n in job.nodes
        ]
    except BaseException:
        claim.abort()
        raise
    if not claim.commit():
        stop_relaunched(agents, new_id, job.label, nodes)
        raise GpudeckError(f"restart: {job.id} was stopped during the restart: {new_id} was stopped too")
    if store is not None:
        first = answers[0] if answers and isinstance(answers[0], dict) else {}
        listed = first.get("argv")
        argv = listed if isinstance(listed, list) else []
        store.record_job(
            JobRecord(
                id=new_id,
                name=str(first.get("name") or job.label),
                created_at=time.time(),
                nodes=[{"host": n.host, "node": n.node} for n in job.nodes],
                argv=[str(a) for a in argv],
                restart_of=job.id,
            )
        )
    return new_id


def remove(agents: Agents, store: Store | None, job: JobTarget) -> None:
    """Delete an ended job's files on every node, and its record."""
    if not job.ended:
        raise GpudeckError(f"job {job.id} is {job.state}: stop or kill it first")
    if job.nodes:  # refused while a restart or resize of it is under way; none starts after this
        try:
            mark(agents, job.id, [(n.host, n.node) for n in job.nodes], "remove")
        except GpudeckError as exc:
            raise GpudeckError(f"rm: {exc}", exc.code) from None
    for n in job.nodes:
        agents.request(n.host, "rm", job=job.id, node=n.node)
    if store is not None:
        store.remove_job(job.id)


def set_autostop(agents: Agents, job: JobTarget, paused: bool) -> None:
    """Pause or resume the job's idle stop on every node."""
    for n in job.nodes:
        agents.request(n.host, "autostop", job=job.id, node=n.node, paused=paused)


def final_state(answers: Iterable[dict[str, Any]]) -> str:
    """The job's state from the nodes' answers to end()."""
    nodes = [a for a in answers if isinstance(a, dict)]
    return job_state(
        a.get("state", "lost") for a in [a for a in nodes if not left_job(a.get("reason"))] or nodes
    )
