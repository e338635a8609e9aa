"""This host's Snapshot, from its own files: the GPUs as NVML reads them now, and each job's
nodes here as the `jobs` op lists them. A job's values are its lowest node's on this host."""

from __future__ import annotations

import socket
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..jobstate import TERMINAL_STATES
from .snapshot import Gpu, Host, JobPoint, Snapshot, number


def cost_of(nodes: List[Dict[str, Any]], now: float) -> Tuple[Optional[float], str]:
    """(what the nodes have cost so far, its currency): price per hour × share × run time; None
    when no node has a price."""
    cost: Optional[float] = None
    currency = "USD"
    for n in nodes:
        price = n.get("price")
        per_hour = number(price.get("per_hour")) if isinstance(price, dict) else None
        if not isinstance(price, dict) or per_hour is None:
            continue
        share = number(price.get("share"))
        currency = str(price.get("currency") or currency)
        cost = (cost or 0.0) + per_hour * (1.0 if share is None else share) * node_seconds(n, now) / 3600
    return cost, currency


def node_seconds(node: Dict[str, Any], now: float) -> float:
    started = number(node.get("started_at"))
    if started is None:
        return 0.0
    ended = number(node.get("ended_at"))
    return max(0.0, (ended if ended is not None else now) - started)


def gpus_held(node: Dict[str, Any], host_gpus: int) -> int:
    """The GPUs a node holds: those its host gave it (--gpus), else every GPU of its host."""
    assigned = node.get("gpus_assigned")
    if isinstance(assigned, dict) and isinstance(assigned.get("indices"), list):
        return len(assigned["indices"])
    return host_gpus


def job_points(
    listed: List[Dict[str, Any]], host: str, host_gpus: int, keep_ended_s: float, now: float
) -> List[JobPoint]:
    by_id: Dict[str, List[Dict[str, Any]]] = {}
    for node in listed:
        by_id.setdefault(str(node.get("id")), []).append(node)
    out = []
    for job_id, nodes in by_id.items():
        nodes.sort(key=lambda n: (len(str(n.get("node"))), str(n.get("node"))))
        lead = nodes[0]
        ended = [number(n.get("ended_at")) for n in nodes]
        over = all(n.get("state") in TERMINAL_STATES for n in nodes) and all(e is not None for e in ended)
        if over and now - max(e for e in ended if e is not None) > keep_ended_s:
            continue  # so the series count follows the live jobs
        given = lead.get("last")
        last: Dict[str, Any] = given if isinstance(given, dict) else {}
        name, state = str(lead.get("name") or "?"), str(lead.get("state"))
        out.append(point_of(job_id, name, host, state, last, nodes, lambda n: gpus_held(n, host_gpus), now))
    return out


def point_of(
    job_id: str,
    name: str,
    host: str,
    state: str,
    last: Dict[str, Any],
    nodes: List[Dict[str, Any]],
    gpus_of: Callable[[Dict[str, Any]], int],
    now: float,
) -> JobPoint:
    """A job's series values, the same for a host's own /metrics and the client's (tui/export)."""
    cost, currency = cost_of(nodes, now)
    return JobPoint(
        id=job_id,
        name=name,
        host=host,
        state=state,
        loss=number(last.get("loss")),
        step=number(last.get("step")),
        samples_per_second=number(last.get("samples_per_sec")),
        lr=number(last.get("lr")),
        cost=cost,
        currency=currency,
        gpu_seconds=sum(node_seconds(n, now) * gpus_of(n) for n in nodes),
    )


def host_snapshot(jobs: Any, nvml: Any, keep_ended_s: float) -> Snapshot:
    """`jobs`: the agent's JobTable; `nvml`: its NVML reader (probes/gpu.py)."""
    host = socket.gethostname()
    sample = nvml.sample(processes=False)
    gpus = [Gpu.from_sample(g) for g in sample.get("gpus") or [] if isinstance(g, dict)]
    points = job_points(jobs.list(None), host, len(gpus), keep_ended_s, time.time())
    return Snapshot([Host(host, True, gpus)], points)
