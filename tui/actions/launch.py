"""Launching a job: its spec from LaunchOptions (priced by the host's settings), sent to the agent,
recorded in the store. One path for `gpudeck run` and the TUI's form."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.spec import DEFAULT_OUTPUT_CAP, IdleStop, JobSpec, Price

from ..cost.rules import CostRuleError, launch_share, parse_idle_stop, spec_cost_fields
from ..cost.settings import HostPrice, host_price
from ..errors import GpudeckError
from ..fleet.states import job_state
from ..hosts_file import LOCAL, HostEntry, HostsFileError, hosts_path, load_hosts
from ..store import JobRecord, Store
from .agents import Agents
from .nodes import is_multinode, plan
from .options import LaunchOptions, check, default_name, parse_output_cap, usage
from .placement import ask_free, pick_hosts
from .preflight import Env, preflight
from .startall import START_TIMEOUT, NodeStartFailed, Start, start_all

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


def launch(agents: Agents, store: Store | None, opts: LaunchOptions, job_id: str | None = None) -> Launched:
    """Build the spec (one per node), launch it, record it. Blocks (hosts.toml, the agents): call
    from a worker. A node that fails to launch kills the nodes already started, then raises."""
    check(opts)
    job_id = job_id or new_job_id()
    if opts.pool and not opts.hosts:  # no --host pin: the pool's hosts, free GPUs first
        free = ask_free(agents, opts.pool)
        hosts = pick_hosts(opts.pool, (), opts.nodes, free, opts.nproc_per_node)
        opts = replace(opts, host=hosts[0], hosts=tuple(hosts))
    if not is_multinode(opts):
        specs = [(opts.host, build_spec(agents, opts, job_id))]
    else:
        specs = []
        plans = plan(opts, job_id)
        for p in plans:
            # the name comes from the user's command, not from the launcher line around it
            node_opts = replace(
                opts,
                host=p.host,
                hosts=(),
                argv=p.argv,
                env=p.env,
                name=opts.name or default_name(opts.argv, job_id),
            )
            specs.append(
                (p.host, build_spec(agents, node_opts, job_id, node=p.node).replace(multinode=p.multinode))
            )
        if len(specs) > 1:
            envs = {h: Env(s.setup, s.path, s.workdir) for h, s in reversed(specs)}
            checked = preflight(agents, plans, envs, job_env=frozenset(dict(opts.env)))
            specs = [
                (h, s.replace(multinode=replace(p.multinode, hints=tuple(checked.hints))))
                for (h, s), p in zip(specs, plans, strict=True)
            ]
    states = launch_specs(agents, specs)
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


def launch_specs(agents: Agents, specs: list[tuple[str, JobSpec]]) -> list[str]:
    """Launch every (host, spec) at once; on a failure kill the ones started (no half job left running)."""
    elastic = any(s.multinode is not None and s.multinode.elastic for _, s in specs)
    try:
        answers = start_all(
            agents,
            [Start(h, s.node, s.id, "launch", {"spec": s.to_wire()}) for h, s in specs],
            together=not elastic,
        )
    except NodeStartFailed as exc:
        if len(specs) > 1:
            raise GpudeckError(f"node {exc.start.node} on {exc.start.host}: {exc.cause}", exc.code) from None
        raise exc.cause from None
    return [obj.get("state", "starting") if isinstance(obj, dict) else "starting" for obj in answers]


def host_setup(host: str) -> list[str]:
    """The host's own setup lines (hosts.toml), which run before a job's."""
    try:
        entry = load_hosts().get(host)
    except HostsFileError as exc:
        raise GpudeckError(str(exc)) from None
    return list(entry.setup) if entry else []


def build_spec(agents: Agents | None, opts: LaunchOptions, job_id: str, node: str = "0") -> JobSpec:
    """The agent's launch spec: the host's setup lines (hosts.toml) run before the job's. Without
    `agents` the job's share of its host is taken as 1 (a budget can then only stop early, never late)."""
    try:
        entry = load_hosts().get(opts.host) or HostEntry(name=opts.host)
    except HostsFileError as exc:
        raise GpudeckError(str(exc), exc.code) from None
    workdir = opts.workdir or (os.getcwd() if opts.host == LOCAL else "~")
    if opts.host == LOCAL:
        workdir = os.path.abspath(os.path.expanduser(workdir))
        if not os.path.isdir(workdir):  # here, before anything is sent: the agent's refusal would come later
            raise usage(
                f"--workdir {workdir}: {'not a directory' if os.path.exists(workdir) else 'no such directory'}"
            )
    env = dict(opts.env)
    spec = JobSpec(
        id=job_id,
        name=opts.name or default_name(opts.argv, job_id),
        node=node,
        argv=tuple(opts.argv),
        workdir=workdir,
        env=env,
        setup=(*entry.setup, *opts.setup),
        grace=opts.grace,
        created_at=time.time(),
        output_cap=output_cap(opts, entry.extra),
        # A local job runs with the PATH it was launched from (an activated venv, conda env…).
        path=os.environ.get("PATH", "") if opts.host == LOCAL else None,
    )
    return spec.replace(**cost_fields(agents, opts, env, entry.extra))


def output_cap(opts: LaunchOptions, settings: dict[str, Any]) -> int:
    """The job's output cap: --output-cap, else the host's `output_cap` (hosts.toml), else the
    spec's default (1 GiB)."""
    cap = parse_output_cap(opts.output_cap)
    if cap is None:
        cap = parse_output_cap(
            settings.get("output_cap"), label=f"{hosts_path()}: [hosts.{opts.host}] output_cap"
        )
    return DEFAULT_OUTPUT_CAP if cap is None else cap


def cost_fields(
    agents: Agents | None, opts: LaunchOptions, env: dict[str, str], settings: dict[str, Any]
) -> dict[str, Any]:
    """price (with this job's share of the host), budget and idle stop, for the supervisor;
    `settings` are the host's price fields from hosts.toml."""
    price = None
    if opts.price_per_hour is not None:
        price = HostPrice(
            per_hour=opts.price_per_hour, currency="USD", market="on-demand", source="--price-per-hour"
        )
    share = 1.0
    idle_stop = opts.idle_stop
    try:
        idle_rule = parse_idle_stop(idle_stop if idle_stop is not None else settings.get("idle_stop"))
    except CostRuleError as exc:
        raise usage(str(exc)) from None
    if agents is not None and ((price or host_price(settings)).known or idle_rule is not None):
        hello = agents.request(opts.host, "hello")
        gpus = len(((hello.get("gpu") or {}).get("gpus")) or [])
        if idle_rule is not None and gpus == 0:
            # an idle stop watches the job's GPUs: without one it would never fire
            if idle_stop is not None:
                raise usage(
                    f"--idle-stop {idle_stop}: host {opts.host} has no NVIDIA GPU to watch (leave it out, or --idle-stop off)"
                )
            agents.notice(
                f"host {opts.host} has no NVIDIA GPU: its idle_stop default ({settings.get('idle_stop')}) "
                "is skipped for this job"
            )
            idle_stop = "off"
        live = sum(
            1 for j in agents.request(opts.host, "jobs")["jobs"] if j["state"] in ("starting", "running")
        )
        share = launch_share(
            gpus, env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES")), live
        )
    try:
        fields = spec_cost_fields(settings, budget=opts.budget, idle_stop=idle_stop, share=share, price=price)
    except CostRuleError as exc:
        raise usage(str(exc)) from None
    return {
        "price": Price.from_wire(fields["price"]) if "price" in fields else None,
        "budget": fields.get("budget"),
        "idle_stop": IdleStop.from_wire(fields["idle_stop"]) if "idle_stop" in fields else None,
    }
