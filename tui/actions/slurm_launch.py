"""A launch on a Slurm host (issue 30): one spec with a Slurm placement, sent to the login node's
agent, which submits the allocation and makes a node dir per rank; the store records every node on
that one host, so ps, logs and metrics ask the login node for each of them."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from remote_agent.spec import Price, SlurmPlacement, SpecError

from ..cost.settings import host_price
from ..fleet.states import job_state
from ..hosts_file import hosts_path
from ..store import JobRecord, Store
from .agents import Agents
from .node_spec import JobTerms, host_entry, node_spec
from .nodes import launcher_argv
from .options import LaunchOptions, check, usage

SLURM_ONLY = (
    ("--gpus-per-node", "gpus_per_node"),
    ("--time", "time_limit"),
    ("--time-warning", "time_warning"),
    ("--partition", "partition"),
    ("--account", "account"),
    ("--qos", "qos"),
)
TIME_WARNING = 120  # seconds: Slurm may send it up to 60 s early and checks limits every ~30 s


def slurm_settings(host: str) -> dict[str, Any] | None:
    """The host's `[hosts.NAME.slurm]` table (hosts.toml), None for a host that is not a cluster."""
    table = host_entry(host).extra.get("slurm")
    return table if isinstance(table, dict) else None


def is_slurm_host(host: str) -> bool:
    return slurm_settings(host) is not None


def refuse_slurm_options(opts: LaunchOptions) -> None:
    for option, field in SLURM_ONLY:
        if getattr(opts, field) is not None:
            raise usage(
                f"{option}: only for Slurm hosts (host {opts.host} is not one: gpudeck hosts add --slurm)"
            )
    if opts.sbatch_args:
        raise usage(
            f"--sbatch-arg: only for Slurm hosts (host {opts.host} is not one: gpudeck hosts add --slurm)"
        )


def placement(opts: LaunchOptions, settings: dict[str, Any]) -> SlurmPlacement:
    """The allocation asked: the options, then the host's slurm table; each refusal names its option."""
    if opts.time_warning is not None and not opts.time_limit:
        raise usage("--time-warning: goes with --time (the limit it warns before)")
    launcher = opts.launcher or ("torchrun" if opts.nodes > 1 else "none")
    wire: dict[str, Any] = {
        "nodes": opts.nodes,
        "gpus_per_node": opts.gpus_per_node,
        "time": opts.time_limit,
        "partition": opts.partition or settings.get("partition"),
        "account": opts.account or settings.get("account"),
        "qos": opts.qos or settings.get("qos"),
        "sbatch_args": list(opts.sbatch_args),
        "launcher": launcher,
        "nproc_per_node": opts.nproc_per_node,
        "master_port": opts.master_port or 29500,
        "warn_before": (TIME_WARNING if opts.time_warning is None else opts.time_warning or None)
        if opts.time_limit
        else None,
    }
    try:
        return SlurmPlacement.from_wire({k: v for k, v in wire.items() if v is not None})
    except SpecError as exc:
        option = {
            "nodes": "--nodes",
            "gpus_per_node": "--gpus-per-node",
            "time": "--time",
            "partition": "--partition",
            "sbatch_args": "--sbatch-arg",
            "nproc_per_node": "--nproc-per-node",
            "warn_before": "--time-warning",
        }
        field = str(exc).split(":")[0].removeprefix("spec.placement.").split("[")[0]
        if field in ("account", "qos") and getattr(opts, field):
            raise usage(f"--{field}: {exc}") from None  # the option (or the launch form's field)
        if field in ("account", "qos") or (field == "partition" and not opts.partition):
            raise usage(f"{hosts_path()}: [hosts.{opts.host}.slurm] {exc}") from None
        raise usage(f"{option.get(field, 'run')}: {exc}") from None


def node_price(host: str, place: SlurmPlacement, budget: float | None) -> Price | None:
    """Each node's own price from the host's rate (`price_per_gpu_hour` × its GPUs, or
    `price_per_node_hour`): its supervisor's budget meter counts with it. None: no such rate."""
    price = host_price(host_entry(host).extra)
    if price.per == "host" or price.per_hour is None:
        return None
    units = (place.gpus_per_node or 0) if price.per == "gpu" else 1
    if budget is not None and not units:
        raise usage(f"--budget: host {host} bills per GPU-hour (price_per_gpu_hour): give --gpus-per-node G")
    return Price(
        per_hour=price.per_hour * units,
        share=1.0,
        currency=price.currency,
        market=price.market,
        source=f"{price.source} x {units} {price.per}{'s' * (units != 1)}",
    )


def launch_slurm(
    agents: Agents, store: Store | None, opts: LaunchOptions, job_id: str
) -> tuple[str, str, str, str, tuple[str, ...]]:
    """(id, name, host, state, every node's host) once the login node has submitted the job."""
    if opts.hosts or opts.pool or opts.elastic:
        raise usage(
            "--host: a Slurm host takes the job whole (its nodes come from the allocation): no list, --pool or --elastic"
        )
    if opts.sync is not None or opts.data or opts.image:
        raise usage("--sync/--data/--image: not on Slurm hosts yet (issue 30 leaves them for later)")
    if opts.gpus is not None:
        raise usage("--gpus: on a Slurm host Slurm gives the GPUs: use --gpus-per-node G")
    check(replace(opts, nodes=1))  # the node bounds of one host do not hold: Slurm places them
    settings = slurm_settings(opts.host) or {}
    place = placement(opts, settings)
    terms = JobTerms.of_options(opts, job_id)
    argv = None
    if place.launcher == "torchrun":  # the SSH hosts' torchrun line; its place comes from PET_* on the node
        argv = tuple(launcher_argv(tuple(opts.argv), [f"--nproc-per-node={place.nproc_per_node}"]))
    spec = node_spec(agents, terms, opts.host, argv=argv).replace(placement=place)
    price = node_price(opts.host, place, spec.budget)
    if price is not None:  # a node is billed on its own, not as a share of the login node
        spec = spec.replace(price=price)
    answer = agents.request(opts.host, "launch", spec=spec.to_wire())
    nodes = [str(n) for n in answer.get("nodes") or range(place.nodes)]
    if store is not None:
        store.record_job(
            JobRecord(
                id=job_id,
                name=spec.name,
                created_at=spec.created_at or time.time(),
                nodes=[{"host": opts.host, "node": node} for node in nodes],
                argv=list(opts.argv),
            )
        )
    state = job_state([str(answer.get("state") or "pending")])
    return job_id, spec.name, opts.host, state, tuple(opts.host for _ in nodes)
