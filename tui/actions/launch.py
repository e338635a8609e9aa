"""Launching a job: the options checked once into its terms, its nodes placed, each node's spec made
on its host (node_spec.py), sent to the agents together, recorded in the store. One path for
`gpudeck run` and the TUI's form."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.spec import JobSpec

from ..data.plan import DataPlan, NodeUrls, check_request_size
from ..errors import GpudeckError
from ..fleet.states import job_state
from ..store import JobRecord, Store
from .agents import Agents
from .node_spec import JobTerms, host_entry, node_spec
from .nodes import is_multinode, plan
from .options import LaunchOptions, check
from .placement import ask_free, pick_hosts
from .preflight import Env, preflight
from .slurm_launch import is_slurm_host, launch_slurm, refuse_slurm_options
from .startall import START_TIMEOUT, NodeStartFailed, Start, start_all
from .sync import ProgressFor, launch_sync, sync_for_launch

LAUNCH_TIMEOUT = START_TIMEOUT


@dataclass(frozen=True)
class Launched:
    id: str
    name: str
    host: str  # the first node's (hosts: every node's)
    state: str
    hosts: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = (
            self.host
            if len(self.hosts) <= 1
            else f"{len(self.hosts)} nodes ({','.join(sorted(set(self.hosts)))})"
        )
        return f"launched {self.name} on {where} ({self.state})"


def launch(
    agents: Agents,
    store: Store | None,
    opts: LaunchOptions,
    job_id: str | None = None,
    progress_for: ProgressFor | None = None,
) -> Launched:
    """One pass: the options checked once into the job's terms, the nodes placed, each node's spec
    made from the terms and its host, the pre-flight, then every node sent at once and recorded.
    Blocks (hosts.toml, the agents): call from a worker. A node that fails to launch kills the nodes
    already started, then raises."""
    if is_slurm_host(opts.host):  # the nodes come from an allocation (issue 30)
        return Launched(*launch_slurm(agents, store, opts, job_id or new_job_id()))
    refuse_slurm_options(opts)
    check(opts)
    job_id = job_id or new_job_id()
    terms = JobTerms.of_options(opts, job_id)
    opts = _placed(agents, opts)
    sync = launch_sync(opts.sync, opts.placed_on[0])
    if sync is not None:  # the job's code: one snapshot, sent once to each of its hosts
        hosts = list(opts.placed_on) if not is_multinode(opts) else [p.host for p in plan(opts, job_id)]
        terms = replace(terms, code=sync_for_launch(agents, sync, hosts, job_id, progress_for))
    if not is_multinode(opts):
        specs, urls = _with_data(opts, [(opts.host, node_spec(agents, terms, opts.host))])
    else:
        plans = plan(opts, job_id)
        specs, urls = _with_data(
            opts,
            [(p.host, node_spec(agents, terms, p.host, p.node, p.argv, p.env, p.multinode)) for p in plans],
        )
        if len(specs) > 1:
            envs = {h: Env(s.setup, s.path, s.workdir) for h, s in reversed(specs)}
            checked = preflight(agents, plans, envs, job_env=frozenset(dict(opts.env)))
            trips = tuple(f"node {rank}: {ms:.2f} ms" for rank, ms in sorted(checked.rtt_ms.items()))
            specs = [
                (h, s.replace(multinode=replace(p.multinode, hints=tuple(checked.hints), round_trips=trips)))
                for (h, s), p in zip(specs, plans, strict=True)
            ]
    states = launch_specs(agents, specs, urls)
    first = specs[0][1]
    if store is not None:
        store.record_job(
            JobRecord(
                id=job_id,
                name=first.name,
                created_at=first.created_at or time.time(),
                nodes=[{"host": h, "node": s.node} for h, s in specs],
                argv=list(opts.argv),
            )
        )
    return Launched(job_id, first.name, specs[0][0], job_state(states), tuple(h for h, _ in specs))


def _with_data(
    opts: LaunchOptions, specs: list[tuple[str, JobSpec]]
) -> tuple[list[tuple[str, JobSpec]], dict[str, NodeUrls]]:
    """Each node's data sources (listed once per prefix, before anything launches) and its URLs by
    host, which travel beside the spec (tui/data)."""
    plan = DataPlan(opts.data)
    out, urls = [], {}
    for host, spec in specs:
        sources, urls[host] = plan.for_host(host)
        if sources:
            spec = spec.replace(data=sources)
            check_request_size(spec, urls[host])
        out.append((host, spec))
    return out, urls


def _placed(agents: Agents, opts: LaunchOptions) -> LaunchOptions:
    """A pool without a `--host` pin: the pool's hosts, free GPUs first."""
    if not opts.pool or opts.hosts:
        return opts
    hosts = pick_hosts(opts.pool, (), opts.nodes, ask_free(agents, opts.pool), opts.nproc_per_node)
    return replace(opts, host=hosts[0], hosts=tuple(hosts))


def launch_specs(
    agents: Agents, specs: list[tuple[str, JobSpec]], data_urls: dict[str, NodeUrls] | None = None
) -> list[str]:
    """Launch every (host, spec) at once; on a failure kill the ones started (no half job left running).
    `data_urls`: by host, the presigned URLs of its spec's data."""
    elastic = any(s.multinode is not None and s.multinode.elastic for _, s in specs)

    def args(host: str, spec: JobSpec) -> dict[str, Any]:
        urls = (data_urls or {}).get(host)
        return {"spec": spec.to_wire(), **({"data_urls": urls} if urls else {})}

    try:
        answers = start_all(
            agents,
            [Start(h, s.node, s.id, "launch", args(h, s)) for h, s in specs],
            together=not elastic,
        )
    except NodeStartFailed as exc:
        if len(specs) > 1:
            raise GpudeckError(f"node {exc.start.node} on {exc.start.host}: {exc.cause}", exc.code) from None
        raise exc.cause from None
    return [obj.get("state", "starting") if isinstance(obj, dict) else "starting" for obj in answers]


def host_setup(host: str) -> list[str]:
    """The host's own setup lines (hosts.toml), which run before a job's."""
    return list(host_entry(host).setup)


def build_spec(agents: Agents | None, opts: LaunchOptions, job_id: str, node: str = "0") -> JobSpec:
    """A one-node job's spec, as `launch` makes it (the host's setup lines run before the job's)."""
    return node_spec(agents, JobTerms.of_options(opts, job_id), opts.host, node)
