"""A node on a host the job is not on yet (a resize onto the pool, an elastic `+1`): its spec from
what the job's spec kept (the command line, setup lines, workdir option and variable names), and
where each host's interpreter runs for the pre-flight's version check."""

from __future__ import annotations

import os
from typing import Any

from remote_agent.spec import DEFAULT_GRACE, Code, GpuRequest, IdleStop, JobSpec, Multinode, Price, read

from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import LOCAL
from .agents import Agents
from .container_node import carried_runtime
from .find import Job
from .launch import host_setup
from .node_spec import JobTerms, host_entry, node_spec
from .nodes import NodePlan
from .preflight import Env
from .sync import ensure_snapshot


def rank_key(node: dict[str, Any]) -> tuple[int, str]:
    name = str(node["node"])
    return (int(name), name) if name.isdigit() else (1 << 30, name)


def new_node_spec(
    agents: Agents,
    job: Job,
    p: NodePlan,
    new_id: str,
    given: dict[str, str],
    mn: Multinode | None,
    where: str = "",
) -> JobSpec:
    """The spec of a node on a host the job is not on yet: the same command line, setup lines and
    workdir option as at launch, the new host's own setup and price; refused (before anything is
    stopped) when the job sets variables whose values were not given again."""
    if mn is None:  # a one-node launch kept no plan, so neither its variables' names
        raise GpudeckError(
            f"scale: {job.id} was launched before gpudeck kept its variable names: it can grow only "
            f"on its own hosts ({', '.join(sorted({str(n['host']) for n in job.nodes}))}); use --host"
        )
    if missing := sorted(set(mn.env_keys) - set(given)):
        names = " ".join(f"--env {k}=…" for k in missing)
        where = where or f"goes to {p.host}, which the job is not on yet"
        raise GpudeckError(
            f"scale: node {p.node} {where}; the job sets "
            f"{', '.join(missing)} (values stay on its hosts): give them again ({names})",
            EXIT_USAGE,
        )
    grace = job.first.get("grace")
    terms = JobTerms(
        id=new_id,
        name=job.name,
        command=mn.command,
        env=p.env,
        setup=mn.setup,
        workdir=mn.workdir,
        grace=float(grace) if isinstance(grace, (int, float)) else DEFAULT_GRACE,
        code=read(Code, job.first.get("code")),  # the code the job started with, whatever changed here
        gpus=read(GpuRequest, job.first.get("gpus")),  # as many GPUs per node as the others asked for
        pty=job.first.get("pty") is True,  # drawn to a terminal as the others are
        tensorboard=job.first.get("tensorboard") if isinstance(job.first.get("tensorboard"), str) else None,
        logger_files=job.first.get("logger_files") is not False,
        **job_cost_options(job.first),
    )
    try:
        if terms.code is not None:
            ensure_snapshot(agents, p.host, terms.code, [str(n["host"]) for n in job.nodes])
        spec = node_spec(agents, terms, p.host, p.node, p.argv, p.env)
        runtime = carried_runtime(job.first, host_entry(p.host).extra)  # the job's image, if any
        return spec.replace(runtime=runtime) if runtime is not None else spec
    except GpudeckError as exc:  # e.g. the job has a budget and the new host no price: said before any stop
        raise GpudeckError(f"scale: node {p.node} on {p.host}: {exc}", exc.code) from None


def job_cost_options(first: dict[str, Any]) -> dict[str, Any]:
    """The job's own cost rules, for a node on a new host (its supervisor enforces them as the
    others' do): the budget, a `--price-per-hour` that overrode the hosts' prices (else the new
    host's own price holds), and the idle stop (`off` when the job has none, whatever that host's
    default)."""
    price = read(Price, first.get("price"))
    budget = first.get("budget")
    return {
        "budget": float(budget)
        if isinstance(budget, (int, float)) and not isinstance(budget, bool)
        else None,
        "price_per_hour": price.per_hour
        if price is not None and price.source == "--price-per-hour"
        else None,
        "idle_stop": idle_text(read(IdleStop, first.get("idle_stop"))),
    }


def idle_text(rule: IdleStop | None) -> str:
    """An idle-stop rule as the spec keeps it, in `--idle-stop`'s words (`30m@10%+15m`); `off` for none."""
    if rule is None:
        return "off"
    return f"{rule.minutes:g}m@{rule.below_pct:g}%+{rule.grace_minutes:g}m"


def interpreter_envs(
    job: Job, plans: list[NodePlan], fresh: dict[str, JobSpec], mn: Multinode | None
) -> dict[str, Env]:
    """Where each host's interpreter runs, for the pre-flight's version check (asked only when a
    new host joins: the old hosts already ran the job)."""
    out: dict[str, Env] = {}
    setup = list(mn.setup) if mn is not None else []
    for p in plans:
        if p.host in out:
            continue
        if p.node in fresh:
            s = fresh[p.node]
            out[p.host] = Env(s.setup, s.path, s.workdir)
        else:
            node = next(n for n in job.nodes if n["host"] == p.host)
            out[p.host] = Env(
                tuple(host_setup(p.host) + setup),
                os.environ.get("PATH") if p.host == LOCAL else None,
                str(node.get("workdir") or "") or None,
            )
    return out
