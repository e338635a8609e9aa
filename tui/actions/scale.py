"""`gpudeck scale JOB +1|-1|N` in restart mode: stop every node (the trainer checkpoints on
SIGTERM), then relaunch the same command on the new node count as a new job that resumes.

A new job id per resize, not the same id with a generation: a job's nodes, journal and seqs stay
what one run wrote (no reader has to learn generations), and the user's view stays coherent the way
`restart` already keeps it: the new job has the same name, `restart_of` links it to the old one
(the TUI follows restarts by name), and its spec says `resized_from: {job, nodes}`. Each new node
is an agent `restart` of an old node on the same host with the new node's argv, placement env and
plan (`as_node`, `changes`), so the spec's env values never travel back to the client.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import replace

from remote_agent.names import new_job_id
from remote_agent.spec import ResizedFrom

from ..errors import EXIT_USAGE, GpudeckError
from ..fleet.states import degraded_why
from ..fleet.watch import WatchInfo
from ..hosts_file import LOCAL
from ..store import JobRecord, Store
from .agents import Agents
from .batch_fit import check_batch_fits
from .control import JobTarget, end
from .elastic import scale_elastic
from .find import Job, list_jobs, pick
from .jobdata import JobData, NodeData
from .newmaster import moved_master
from .newnode import interpreter_envs, new_node_spec, rank_key
from .nodes import LOCAL_ADDR, plan
from .options import LaunchOptions, check
from .placement import ask_free, layout
from .preflight import preflight
from .resize import Scaled, target_count
from .rollback import STARTUP_WINDOW, failed_at_start, rollback_onto
from .slurm_resubmit import scale_slurm, slurm_host_of
from .startall import NodeStartFailed, Start, start_all
from .transition import Claim, node_names, stop_relaunched
from .watch import refuse_on_watch


def checkpoint_of(argv: list[str]) -> tuple[str, str] | None:
    """("dir", DIR) or ("uri", URI) as the command passes them (`--flag V` or `--flag=V`)."""
    for i, arg in enumerate(argv):
        for flag, kind in (("--checkpoint-uri", "uri"), ("--checkpoint-dir", "dir")):
            if arg == flag and i + 1 < len(argv):
                return kind, argv[i + 1]
            if arg.startswith(flag + "="):
                return kind, arg[len(flag) + 1 :]
    return None


def _local_dir(job: Job, kind: str, where: str) -> str | None:
    """The checkpoint dir to check on this machine: when the master node runs on `local`."""
    if kind != "dir" or job.first["host"] != LOCAL:
        return None
    return os.path.join(str(job.first.get("workdir") or "."), os.path.expanduser(where))


def source_of(node: str, host: str, ranks: Mapping[str, str]) -> str:
    """The old node a relaunched node restarts from: the same rank's, else one on the same host
    (a restart runs where its source ran)."""
    return node if ranks.get(node) == host else next(r for r, h in ranks.items() if h == host)


def scale(
    agents: Agents,
    store: Store | None,
    job: Job,
    count: str,
    new_id: str | None = None,
    why: str | None = None,
    onto: tuple[str, ...] = (),
    env: tuple[tuple[str, str], ...] = (),
    move: Mapping[str, str] | None = None,
    refresh_data: bool = False,
    nproc_per_node: int | None = None,
    rollback_window: float = STARTUP_WINDOW,
) -> Scaled:
    """Stop every node, then relaunch on the new count as a new job (returned). Blocks. `why`
    goes into the new job's `resized` record (default: `scale +1`, and what was dropped). New
    nodes go `onto` those hosts when given (one per new node), else onto the job's pool, free GPUs
    first (tui/actions/placement.py). `env`: values for a node on a host the job is not on yet
    (the job's own values never leave its hosts), also set on the other nodes. `move` (old host →
    new host; `count` is then ignored): the same node count, those nodes relaunched on the new
    hosts from the checkpoint (a rule's bigger instance type). Every node gets the job's `--data`
    presigned again (tui/actions/jobdata.py; `refresh_data`: the prefixes' current objects).
    `nproc_per_node` (with `move`): the processes per node on the new hosts — a bigger type's GPU
    count — where torchrun starts them (a `--launcher none` command starts its own)."""
    refuse_on_watch(WatchInfo.of(job.first.get("watch")), "scale", job.id)
    cluster = slurm_host_of([str(n["host"]) for n in job.nodes])
    if cluster is not None:  # a new allocation of the new size (tui/actions/slurm_resubmit.py)
        target = JobTarget.of_job(job)
        stop = None if target.ended else (lambda: end(agents, target, "stop", reason="scale", resizing=True))
        return scale_slurm(agents, store, cluster, job.id, len(job.nodes), count, stop, new_id, why)
    mn = job.plan  # None: a one-node launch, grown as the same command on more nodes
    if mn is not None and mn.elastic:  # torchrun's rendezvous: nodes join and leave the running job
        if move:
            raise GpudeckError(
                f"scale: {job.id} is elastic: moving its nodes to other hosts is not done", EXIT_USAGE
            )
        return scale_elastic(agents, store, job, mn, count, onto, env, refresh_data)
    current = job.planned
    n = len(job.nodes) if move else target_count(count, current)
    missing = job.missing  # nodes on unreachable hosts: a smaller count drops them (degraded → running)
    if missing and n > len(job.nodes):
        raise GpudeckError(
            f"scale: {job.id} is degraded ({degraded_why(missing)}): drop the missing node first "
            f"(`gpudeck scale {job.id} -{len(missing)}`), then grow it"
        )
    command = (
        list(mn.command) if mn is not None and mn.command else [str(a) for a in job.first.get("argv") or []]
    )
    ck = checkpoint_of(command)
    if ck is None:
        raise GpudeckError(
            f"scale: {job.id}'s command has no --checkpoint-dir or --checkpoint-uri: "
            "a restart-mode resize resumes from a checkpoint",
            EXIT_USAGE,
        )
    directory = _local_dir(job, *ck)
    if directory is not None and job.ended and not os.path.isdir(directory):
        raise GpudeckError(f"scale: checkpoint dir {directory} does not exist: nothing to resume from")
    kept = [str(n_["host"]) for n_ in sorted(job.nodes, key=rank_key)]  # missing nodes are not in job.nodes
    ranks = {str(n_["node"]): n_["host"] for n_ in job.nodes}
    per_node = mn.nproc_per_node if mn is not None else 1
    if move and nproc_per_node and mn is not None and mn.launcher == "torchrun":
        per_node = nproc_per_node  # one process per GPU of the new type, not the old count
    pool = list(mn.pool) if mn is not None else []
    free = ask_free(agents, pool) if pool and n > len(kept) and not onto else None
    # moved nodes: the new hosts take the old ones' places (in the pin too)
    pinned = [(move or {}).get(h, h) for h in (mn.pinned if mn is not None else ())]
    hosts = layout([(move or {}).get(h, h) for h in kept], n, pool, pinned, onto, free, per_node)
    given = dict(env)
    keep_port: int | None = mn.master_port if mn is not None and not mn.port_chosen else None
    # a local master's address is chosen again; an SSH master's stays what the user gave (even 127.0.0.1)
    addr = None if mn is None or (mn.master_addr == LOCAL_ADDR and set(hosts) == {LOCAL}) else mn.master_addr
    old_master = mn.hosts[0] if mn is not None and mn.hosts else str(job.first["host"])
    if mn is not None and addr is not None and hosts[0] != old_master:
        # node 0's host is gone: the master moves to the new node 0's host, at its address and a port free there
        addr, keep_port = moved_master(agents, hosts[0], addr, mn.master_port)
        agents.notice(f"scale: node 0 moves from {old_master} to {hosts[0]}: master {addr}:{keep_port}")
    opts = check(
        LaunchOptions(
            argv=tuple(command),
            host=hosts[0],
            hosts=tuple(hosts),
            nodes=n,
            nproc_per_node=per_node,
            launcher=mn.launcher if mn is not None else None,
            master_port=keep_port,
            env=tuple(given.items()),
            pool=tuple(pool),
            setup=mn.setup if mn is not None else (),
            workdir=mn.workdir if mn is not None else None,
            master_addr=addr,
        )
    )
    plans = plan(opts)  # before stopping: a plan (or a pre-flight) that fails leaves the job running
    if opts.launcher != "none":  # torchrun sets the world size; with `none` the command does
        check_batch_fits("scale", command, n, per_node)
    env_keys = tuple(sorted({*(mn.env_keys if mn is not None else ()), *given}))
    new_id = new_id or new_job_id()
    # nodes on hosts the job is not on yet start from a spec of their own (the others restart)
    fresh = {
        p.node: new_node_spec(agents, job, p, new_id, given, mn).replace(restart_of=job.id)
        for p in plans
        if p.host not in kept
    }
    # each node's data presigned again before anything stops (a changed object refuses the resize)
    data = JobData(agents, refresh_data)
    renewed: dict[str, NodeData] = {}
    for p in plans:
        if p.node in fresh:
            fresh[p.node], renewed[p.node] = data.for_new_node(fresh[p.node], p.host, job.first)
        else:
            renewed[p.node] = data.for_restart(p.host, job.id, source_of(p.node, p.host, ranks))
    envs = interpreter_envs(job, plans, fresh, mn) if fresh else None
    checked = preflight(
        agents,
        plans,
        envs,
        job_env=frozenset(env_keys),
        held_by_job=not job.ended and mn is not None and mn.master_port == plans[0].multinode.master_port,
    )
    # one change of the job at a time: claimed for the whole job before anything stops
    claim = Claim.begin(agents, job.id, node_names(job), "resize", new_id, "scale")
    try:
        if not job.ended:
            end(agents, JobTarget.of_job(job), "stop", reason="scale", resizing=True)
        if directory is not None and not os.path.isdir(directory):
            raise GpudeckError(
                f"scale: {job.id} stopped, but its checkpoint dir {directory} does not exist: "
                "not relaunched (`gpudeck restart` starts it over)"
            )
        claim.check()  # a stop that arrived meanwhile wins: nothing is relaunched
    except BaseException:
        claim.abort()
        raise
    name = job.name
    dropped = degraded_why(missing)
    resized_from = ResizedFrom(
        job.id,
        current,
        why
        or (
            f"move {', '.join(f'{a} → {b}' for a, b in (move or {}).items())}"
            if move
            else f"scale {count.strip()}" + (f", dropped {dropped}" if dropped else "")
        ),
    )
    starts = []
    for p in plans:
        # the job's own --host list stays its pin (a pinned resize is one resize, not a new pin)
        multinode = replace(p.multinode, hints=checked.hints, env_keys=env_keys, pinned=tuple(pinned))
        if p.node in fresh:
            spec = fresh[p.node].replace(multinode=multinode, resized_from=resized_from)
            launch_args = {"spec": spec.to_wire(), **renewed[p.node].restart_args()}
            starts.append(Start(p.host, p.node, new_id, "launch", launch_args))
            continue
        source = source_of(p.node, p.host, ranks)
        changes = {
            "argv": list(p.argv),
            "env": dict(p.env),
            "multinode": multinode.to_wire(),
            "resized_from": resized_from.to_wire(),
            **renewed[p.node].changes(),
        }
        starts.append(
            Start(
                p.host,
                p.node,
                new_id,
                "restart",
                {
                    "job": job.id,
                    "node": source,
                    "new_id": new_id,
                    "as_node": p.node,
                    "changes": changes,
                    **renewed[p.node].restart_args(),
                },
            )
        )
    try:
        answers = start_all(agents, starts)  # every node at once: their supervisors start side by side
    except NodeStartFailed as exc:
        claim.abort()
        raise GpudeckError(
            f"scale: {job.id} stopped; relaunching on {n} nodes failed: {exc.cause}", exc.code
        ) from None
    except BaseException:
        claim.abort()
        raise
    if not claim.commit():  # a stop arrived while the new nodes started: it wins, they stop too
        stop_relaunched(agents, new_id, job.name, [(s.host, s.node) for s in starts])
        raise GpudeckError(
            f"scale: {job.id} was stopped during the resize: the relaunched job {new_id} was stopped too"
        )
    for s, obj in zip(starts, answers, strict=True):
        if s.op == "restart" and isinstance(obj, dict) and obj.get("name"):
            name = str(obj["name"])
    if store is not None:
        store.record_job(
            JobRecord(
                id=new_id,
                name=name,
                created_at=time.time(),
                nodes=[{"host": p.host, "node": p.node} for p in plans],
                argv=command,
                restart_of=job.id,
            )
        )
    cause = failed_at_start(agents, new_id, [(p.host, p.node) for p in plans], rollback_window)
    if cause is not None:  # the new size failed at once: back to the old one, from the same checkpoint
        back = _roll_back(agents, store, new_id, current, kept, hosts, env, refresh_data, cause)
        raise GpudeckError(
            f"scale: {new_id} on {n} nodes failed within {rollback_window:g} s of its start ({cause}): "
            f"rolled back to {current} nodes from the same checkpoint as {back.id}"
        )
    return Scaled(new_id, name, job.id, current, n, dropped)


def _roll_back(
    agents: Agents,
    store: Store | None,
    failed: str,
    count: int,
    old_hosts: list[str],
    new_hosts: list[str],
    env: tuple[tuple[str, str], ...],
    refresh_data: bool,
    cause: str,
) -> Scaled:
    job = pick(list_jobs(agents), failed)
    if not job.ended:  # its other nodes may wait on a rendezvous that never completes
        end(agents, JobTarget.of_job(job), "kill", resizing=True)
        job = pick(list_jobs(agents), failed)
    return scale(
        agents,
        store,
        job,
        str(count),
        why=f"rollback: {cause}"[:300],
        onto=rollback_onto(old_hosts, new_hosts),
        env=env,
        refresh_data=refresh_data,
        rollback_window=0.0,  # a rollback that fails too is left as it is: said, not retried
    )
