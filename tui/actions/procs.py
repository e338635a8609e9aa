"""The process view's data: each node's process tree from its agent's `procs` op (CPU %, RSS, GPU
memory per process), or the processes on one GPU of a host. Blocks (call from a worker)."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..errors import GpudeckError
from .agents import Agents

INTERVAL = 0.3  # seconds between the agent's two CPU readings
MAX_ROWS = 1024  # per node: a reader bounds what it keeps, whatever an agent sends
MAX_COMMAND = 400


@dataclass(frozen=True)
class ProcRow:
    host: str
    node: str  # "" for a GPU's processes
    pid: int
    ppid: int | None
    role: str  # supervisor, command, child, gpu
    command: str
    cpu_percent: float | None
    rss_bytes: int | None
    gpus: tuple[tuple[int | None, int | None], ...]  # (GPU index, GPU memory MiB) per GPU it is on


@dataclass(frozen=True)
class ProcTable:
    rows: tuple[ProcRow, ...]
    failures: tuple[str, ...]  # one line per node whose agent did not answer


def _num(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def rows_of(host: str, node: str, answer: Any) -> list[ProcRow]:
    """Total over any answer's shape: a malformed process is skipped, not raised."""
    rows = []
    found = answer.get("processes") if isinstance(answer, dict) else None
    for p in found[:MAX_ROWS] if isinstance(found, list) else ():
        if not isinstance(p, dict) or not isinstance(p.get("pid"), int) or isinstance(p.get("pid"), bool):
            continue
        on_gpus = p.get("gpus")
        listed = on_gpus if isinstance(on_gpus, list) else []
        gpus = tuple(
            (_num(g.get("index")), _num(g.get("mem_mib"))) for g in listed[:64] if isinstance(g, dict)
        )
        rows.append(
            ProcRow(
                host,
                node,
                p["pid"],
                _num(p.get("ppid")),
                str(p.get("role") or "child")[:16],
                str(p.get("command") or "")[:MAX_COMMAND],
                _num(p.get("cpu_percent")),
                _num(p.get("rss_bytes")),
                gpus,
            )
        )
    return rows


def job_processes(agents: Agents, nodes: Iterable[tuple[str, str]], job_id: str) -> ProcTable:
    """Every (host, node) of the job asked at once; a node that fails is named, the others shown."""
    nodes = list(nodes)

    def ask(target: tuple[str, str]) -> list[ProcRow] | str:
        host, node = target
        try:
            return rows_of(
                host,
                node,
                agents.request(host, "procs", timeout=15.0, job=job_id, node=node, interval=INTERVAL),
            )
        except GpudeckError as exc:
            return f"{host} node {node}: {exc}"

    rows: list[ProcRow] = []
    failures: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(nodes)))) as pool:
        for got in pool.map(ask, nodes):
            if isinstance(got, str):
                failures.append(got)
            else:
                rows.extend(got)
    return ProcTable(tuple(rows), tuple(failures))


def gpu_processes(agents: Agents, host: str, index: int) -> ProcTable:
    try:
        answer = agents.request(host, "procs", timeout=15.0, gpu=index, interval=INTERVAL)
    except GpudeckError as exc:
        return ProcTable((), (f"{host} GPU {index}: {exc}",))
    return ProcTable(tuple(rows_of(host, "", answer)), ())
