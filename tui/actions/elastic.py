"""`gpudeck scale` of a job launched with `--elastic MIN:MAX` (torchrun's c10d rendezvous): the job
keeps its id and its running nodes. `+N` launches N more nodes that join the rendezvous (torchrun's
agents see them waiting and restart their workers at the new world size; the reference trainer
checkpoints on that stop and resumes). `-N` stops the N highest-ranked running nodes; the trainer
ranks left exit for a regroup (trainer/dist.py `exit_code`) and their agents re-form without them.
Node 0 hosts the rendezvous store (`is_host`), so it is never the one stopped.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.spec import Multinode

from ..errors import EXIT_USAGE, GpudeckError
from ..fleet.states import ACTIVE
from ..store import JobRecord, Store
from .agents import Agents
from .batch_fit import check_batch_fits
from .control import JobTarget, NodeTarget, end
from .find import Job
from .jobdata import JobData
from .launch import LAUNCH_TIMEOUT
from .newnode import interpreter_envs, new_node_spec, rank_key
from .nodes import plan
from .options import LaunchOptions
from .placement import ask_free, layout
from .preflight import preflight
from .resize import Scaled, target_count
from .transition import Claim, node_names


def scale_elastic(
    agents: Agents,
    store: Store | None,
    job: Job,
    mn: Multinode,
    count: str,
    onto: tuple[str, ...] = (),
    env: tuple[tuple[str, str], ...] = (),
    refresh_data: bool = False,
    why: str | None = None,
) -> Scaled:
    """`mn`: the job's plan, launched elastic (its `elastic` bounds set). Joining nodes get the
    job's `--data` presigned again (`refresh_data`: the prefixes' current objects). `why` goes into
    the regroup's `resized` record (default `scale +N`; a managed recovery says its own)."""
    assert mn.elastic is not None
    lo, hi = mn.elastic
    running = sorted((n for n in job.nodes if n["state"] in ACTIVE), key=rank_key)
    if job.ended or not running:
        raise GpudeckError(
            f"scale: {job.id} is {job.state}: an elastic job grows or shrinks while it runs "
            "(`gpudeck restart` starts it again)"
        )
    n = target_count(count, len(running))
    if not lo <= n <= hi:
        raise GpudeckError(
            f"scale: {job.id} is elastic between {lo} and {hi} nodes: {n} is outside", EXIT_USAGE
        )
    check_batch_fits("scale", mn.command, n, mn.nproc_per_node)
    why = why or f"scale {count.strip()}"
    # one change of the job at a time (tui/actions/transition.py); the job keeps its id: let go after
    claim = Claim.begin(agents, job.id, node_names(job), "resize", new_job_id(), "scale")
    try:
        if n < len(running):
            return _leave(agents, job, running, n, why)
        return _join(agents, store, job, running, n, mn, onto, dict(env), why, JobData(agents, refresh_data))
    finally:
        claim.abort()


def _leave(agents: Agents, job: Job, running: list[dict[str, Any]], n: int, why: str) -> Scaled:
    """Stop the highest ranks (never node 0: its torchrun holds the rendezvous store)."""
    going = running[n:]
    if any(str(g["node"]) == "0" for g in going):
        raise GpudeckError(f"scale: {job.id}'s node 0 holds the rendezvous: it stays while the job runs")
    _note(agents, job, running, len(running), n, why)  # before the stop: the others regroup while it ends
    target = JobTarget(
        job.id,
        job.name or job.id,
        job.state,
        tuple(NodeTarget(str(g["host"]), str(g["node"]), _grace(g)) for g in going),
    )
    end(agents, target, "stop", reason="scale", resizing=True)
    left = ", ".join(f"node {g['node']} on {g['host']}" for g in going)
    return Scaled(job.id, job.name, job.id, len(running), n, elastic=f"{left} stopped; the others re-form")


def _join(
    agents: Agents,
    store: Store | None,
    job: Job,
    running: list[dict[str, Any]],
    n: int,
    mn: Multinode,
    onto: tuple[str, ...],
    given: dict[str, str],
    why: str,
    data: JobData,
) -> Scaled:
    """Launch the new nodes with the job's own rendezvous line; node names go on from the highest."""
    pool = list(mn.pool)
    kept = [str(r["host"]) for r in running]
    free = ask_free(agents, pool) if pool and not onto else None
    hosts = layout(kept, n, pool, mn.pinned, onto, free, mn.nproc_per_node)[len(kept) :]
    next_rank = 1 + max((int(r) for r in (str(x["node"]) for x in job.nodes) if r.isdigit()), default=0)
    env_keys = tuple(sorted({*mn.env_keys, *given}))
    opts = LaunchOptions(
        argv=mn.command,
        host=hosts[0],
        hosts=tuple(hosts),
        nodes=len(hosts),
        nproc_per_node=mn.nproc_per_node,
        launcher="torchrun",
        env=tuple(given.items()),
        master_addr=mn.master_addr,
        master_port=mn.master_port,
        pool=mn.pool,
        setup=mn.setup,
        workdir=mn.workdir,
        elastic=mn.elastic,
    )
    plans = [
        replace(
            p,
            env=tuple(dict(p.env, GPUDECK_NNODES=str(n)).items()),
            multinode=replace(
                p.multinode, nodes=n, hosts=(*kept, *hosts), env_keys=env_keys, pinned=mn.pinned
            ),
        )
        for p in plan(opts, job.id, first_rank=next_rank)
    ]
    specs = {
        p.node: new_node_spec(agents, job, p, job.id, given, mn, where=f"would join on {p.host}")
        for p in plans
    }
    master = next((r for r in running if str(r["node"]) == "0"), running[0])
    urls: dict[str, dict[str, Any]] = {}
    for p in plans:  # each new node's data: the job's own and its host's, presigned now
        specs[p.node], renewed = data.for_new_node(specs[p.node], p.host, master)
        urls[p.node] = renewed.restart_args()
    # the store answers at the master port: each new host must reach it; versions as the job's
    probe_plans = [replace(plans[0], host=str(master["host"]), node=str(master["node"])), *plans]
    # versions only when a host joins that the job is not on (the others already run its interpreter)
    envs = interpreter_envs(job, probe_plans, specs, mn) if set(hosts) - set(kept) else None
    preflight(
        agents, probe_plans, envs, job_env=frozenset(env_keys), held_by_job=True
    )  # the store holds the port
    # Told before the launch: a joining node can bring the regroup about within a second of its
    # start (torchrun's monitor polls every 0.1 s), and a note that came after it would leave the
    # `resized` record without its why. A launch that fails leaves a note that only a regroup to
    # this size would take (elastic_resize.py drops one whose `to` a regroup does not match), and
    # the next scale sends its own.
    _note(agents, job, running, len(running), n, why)
    started: list[tuple[str, str]] = []
    try:
        for p in plans:
            agents.request(
                p.host,
                "launch",
                timeout=LAUNCH_TIMEOUT,
                spec=specs[p.node].replace(multinode=p.multinode).to_wire(),
                **urls[p.node],
            )
            started.append((p.host, p.node))
    except GpudeckError as exc:
        for host, node in started:
            with contextlib.suppress(GpudeckError):
                agents.request(host, "kill", timeout=LAUNCH_TIMEOUT, job=job.id, node=node)
        raise GpudeckError(
            f"scale: {job.id}: a new node failed to start ({exc}); the job runs on as it was", exc.code
        ) from None
    # The joining nodes too: the rendezvous ranks its members as they join its round, so the new
    # node, waiting there first, is often rank 0 of the new world, and only rank 0's node journals
    # the regroup (test_managed_elastic_real[preempted] saw its record without the why). Its
    # supervisor runs by now; the regroup comes seconds later, once torch is imported on both sides.
    _note(agents, job, [{"host": p.host, "node": p.node} for p in plans], len(running), n, why)
    if store is not None:
        record = store.get_job(job.id)
        nodes = [{"host": str(x["host"]), "node": str(x["node"])} for x in job.nodes]
        store.record_job(
            JobRecord(
                id=job.id,
                name=job.name,
                created_at=record.created_at if record else 0.0,
                nodes=nodes + [{"host": p.host, "node": p.node} for p in plans],
                argv=list(mn.command),
                restart_of=record.restart_of if record else None,
            )
        )
    joined = ", ".join(f"node {p.node} on {p.host}" for p in plans)
    return Scaled(job.id, job.name, job.id, len(running), n, elastic=f"{joined} joining")


def _note(agents: Agents, job: Job, told: list[dict[str, Any]], before: int, n: int, why: str) -> None:
    """Tell each node in `told` why the next regroup (from `before` to `n` nodes) happens: the one
    whose output carries rank 0 then (any node: the rendezvous ranks its members as they join)
    journals the `resized` record with it."""
    for node in told:
        try:
            agents.request(
                str(node["host"]),
                "resizing",
                job=job.id,
                node=str(node["node"]),
                why=why,
                **{"from": before, "to": n},
            )
        except GpudeckError as exc:  # an older agent: the resize happens, its record has no why
            agents.notice(f"scale: {job.id}: node {node['node']}: the resize's why is not journaled ({exc})")


def _grace(node: dict[str, Any]) -> float | None:
    g = node.get("grace")
    return float(g) if isinstance(g, (int, float)) and not isinstance(g, bool) else None
