"""The `procs` op: a job's process tree on this node (or the processes on one GPU), each with CPU %,
RSS and the GPU memory NVML accounts to it — the rows of the client's process view."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set

from ..jobstate import TERMINAL_STATES
from ..probes.gpu import Nvml
from ..probes.procs import process_table
from ..supervision.jobspec import job_key
from ..supervision.proctree import job_tree
from ..supervision.watchspec import watched_tree

MAX_INTERVAL = 2.0


class ProcsError(Exception):
    """A `procs` request that cannot be answered; the message is the one-line answer."""


def interval_of(req: Dict[str, Any]) -> float:
    value = req.get("interval", 0.25)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_INTERVAL:
        raise ProcsError("interval: expected seconds in (0, %g], got %r" % (MAX_INTERVAL, value))
    return float(value)


def job_pids(view: Any) -> Dict[int, str]:
    """pid → role ("supervisor", "command", "child") of a job's live tree; empty once it is over."""
    obj = view.refresh()
    if obj["state"] in TERMINAL_STATES:
        return {}
    spec = view.spec or {}
    supervisor = obj.get("supervisor_pid") if isinstance(obj.get("supervisor_pid"), int) else None
    tree: Set[int] = set(job_tree(job_key(spec), supervisor)) if spec.get("id") else set()
    tree |= set(watched_tree(spec))
    roles = {pid: "child" for pid in tree}
    if supervisor is not None:
        roles[supervisor] = "supervisor"
    if isinstance(obj.get("pid"), int) and obj["pid"] in roles:
        roles[obj["pid"]] = "command"
    return roles


def gpu_pids(nvml: Nvml, index: Any) -> Dict[int, str]:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ProcsError("gpu: expected a GPU index >= 0, got %r" % (index,))
    for gpu in nvml.sample().get("gpus", []):
        if gpu.get("index") == index:
            return {p["pid"]: "gpu" for p in gpu.get("processes", [])}
    raise ProcsError("gpu %d: no such GPU on this host (or NVML does not answer)" % index)


def answer(roles: Dict[int, str], nvml: Nvml, interval: float) -> Dict[str, Any]:
    """{"processes": rows, "gpu_available", "interval"}; each row also carries "role" and "gpus":
    [{"index", "uuid", "mem_mib"}] for every GPU NVML sees the process on."""
    sample: Dict[str, Any] = nvml.sample() if roles else {"available": nvml.available}
    on_gpu: Dict[int, List[Dict[str, Any]]] = {}
    for gpu in sample.get("gpus", []):
        for p in gpu.get("processes", []):
            on_gpu.setdefault(p["pid"], []).append(
                {"index": gpu.get("index"), "uuid": gpu.get("uuid"), "mem_mib": p.get("mem_mib")}
            )
    rows = process_table(roles, interval) if roles else []
    for row in rows:
        pid = row["pid"]
        row["role"] = roles.get(pid, "child")  # type: ignore[call-overload]
        row["gpus"] = on_gpu.get(pid, [])  # type: ignore[call-overload]
    return {"processes": rows, "gpu_available": bool(sample.get("available")), "interval": interval}


def procs(req: Dict[str, Any], jobs: Any, nvml: Nvml) -> Dict[str, Any]:
    interval = interval_of(req)
    gpu: Optional[Any] = req.get("gpu")
    roles = gpu_pids(nvml, gpu) if gpu is not None else job_pids(jobs.view(req.get("job"), req.get("node")))
    return answer(roles, nvml, interval)
