"""GPUs proven free after a job's end: NVML's compute processes of the job (its marker in their
environment, which a container's processes carry too) still holding GPU memory are killed under
the job's rule (TERM, then KILL after its grace); any that survive, and processes that are not the
job's but sit on the job's GPUs, are what its end reports as `gpus_held` -- never a silent end.

A host without NVML says nothing (`None`): no claim of "free" is made that was not checked.
Standard library only (the agent's rule).
"""

from __future__ import annotations

import signal
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Set

from ..probes.gpu import Nvml
from ..supervision.proctree import is_live, signal_pids
from .holders import job_key_of

KILL_WAIT = 5.0  # after SIGKILL: a process that outlives this is reported as held
POLL = 0.05
GIB = 1024


def _comm(pid: int) -> Optional[str]:
    try:
        with open("/proc/%d/comm" % pid, "rb") as f:
            return f.read().decode("utf-8", "replace").strip()[:64] or None
    except OSError:
        return None


def holders(nvml: Nvml) -> Optional[List[Dict[str, Any]]]:
    """Every process NVML lists on a GPU: {gpu, uuid, pid, user, mem_mib}; None without NVML."""
    sample = nvml.sample(processes=True)
    if not sample.get("available"):
        return None
    out = []
    for g in sample.get("gpus") or []:
        for p in g.get("processes") or []:
            out.append(
                {
                    "gpu": g.get("index"),
                    "uuid": g.get("uuid"),
                    "pid": p["pid"],
                    "user": p.get("user"),
                    "mem_mib": p.get("mem_mib"),
                }
            )
    return out


def of_tree(nvml: Nvml, tree: Set[int]) -> List[Dict[str, Any]]:
    """The GPU holders among a job's leftover processes (seen once, before they are killed)."""
    found = holders(nvml) or []
    return [dict(h, name=_comm(h["pid"])) for h in found if h["pid"] in tree]


def _wait_gone(pids: Iterable[int], seconds: float) -> Set[int]:
    left = {pid for pid in pids if is_live(pid)}
    deadline = time.monotonic() + seconds
    while left and time.monotonic() < deadline:
        time.sleep(POLL)
        left = {pid for pid in left if is_live(pid)}
    return left


def kill_under_rule(pids: Set[int], grace: float, sig: int = signal.SIGTERM) -> Set[int]:
    """The job's rule for what it leaves: its stop signal, then SIGKILL after the grace; the pids
    still alive after that (a kill refused: not ours; a process stuck in the kernel)."""
    signal_pids(pids, sig)
    left = _wait_gone(pids, grace)
    if left:
        signal_pids(left, signal.SIGKILL)
        left = _wait_gone(left, KILL_WAIT)
    return left


def check(
    nvml: Nvml,
    key: str,
    job_gpus: Iterable[Any],
    grace: float,
    freed: Optional[List[Dict[str, Any]]] = None,
    journal: Optional[Callable[..., Any]] = None,
    tree: Optional[Set[int]] = None,
) -> Dict[str, Any]:
    """The end record's GPU fields: `gpus_freed` (leftovers that held GPU memory after the job's
    command ended, killed: `freed`, and any found here) and `gpus_held` (still held after the
    kill). {} when NVML cannot be asked. `job_gpus`: UUIDs (or indices) the job used."""
    found = holders(nvml)
    if found is None:
        return {}
    mine = {h["pid"] for h in found if job_key_of(h["pid"]) == key}
    freed = list(freed or [])
    if mine:
        named = [dict(h, name=_comm(h["pid"])) for h in found if h["pid"] in mine]
        survivors = kill_under_rule(mine, grace)
        freed += [h for h in named if h["pid"] not in survivors]
    after = holders(nvml) or []
    wanted = {str(g) for g in job_gpus}
    held = []
    for h in after:
        owner = job_key_of(h["pid"])
        if owner == key or h["pid"] in mine:
            held.append(dict(h, name=_comm(h["pid"]), ours=True))
        elif owner is None and (str(h["uuid"]) in wanted or str(h["gpu"]) in wanted):
            held.append(dict(h, name=_comm(h["pid"]), ours=False))  # not the job's: never killed
    fields: Dict[str, Any] = {"gpus_checked": True}
    if freed:
        fields["gpus_freed"] = freed
    if held:
        fields["gpus_held"] = held
        if journal is not None:
            journal("event", event="gpus_held", data={"held": held, "why": "; ".join(map(held_text, held))})
    if freed and journal is not None:
        journal("event", event="gpus_freed", data={"freed": freed})
    return fields


def gib(mem_mib: Any) -> str:
    if not isinstance(mem_mib, int):
        return "memory unknown"
    return "%.0f GiB" % (mem_mib / float(GIB)) if mem_mib >= GIB else "%d MiB" % mem_mib


def held_text(h: Dict[str, Any]) -> str:
    """`GPU 3 still held by PID 4242 (python), 38 GiB`, and whose when it is not the job's."""
    who = h.get("name") or h.get("user") or "?"
    text = "GPU %s still held by PID %s (%s), %s" % (h.get("gpu"), h.get("pid"), who, gib(h.get("mem_mib")))
    return text if h.get("ours", True) else text + " (not the job's: left alone)"
