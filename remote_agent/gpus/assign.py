"""GPU requests (`spec.gpus`): a node that asks for N GPUs gets N specific free ones of this host.

- Free: held by no live gpudeck assignment (`gpus.json` in a node dir, held until that node's
  journal ends, whatever the end) and used by no process NVML lists on it (another user's job, a
  gpudeck job launched without `--gpus`, a notebook).
- Found without reading every job: the host's index of holders (registry.py) names the few nodes
  to check.
- Atomic: the choice and the write of `gpus.json` happen under an exclusive lock of the agent
  dir's `gpus.lock`, so two launches at once never get the same GPU; the node's dir exists before
  its supervisor does, and a dir with an assignment and no ended journal holds it.
- Given: the job's env gets CUDA_VISIBLE_DEVICES (NVML indices, with CUDA_DEVICE_ORDER=PCI_BUS_ID
  so CUDA numbers GPUs as NVML does); a container job's device list follows it
  (containers/command.py job_gpus), as do its GPU samples, its idle judgement and its cost share.

Standard library only (the agent's rule).
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from ..probes.gpu import Nvml
from ..storage.files import open_private, write_private_atomic
from .holders import foreign_user
from .record import ASSIGNMENT
from .registry import live_holders, write_index

LOCK = "gpus.lock"


class GpuShortage(Exception):
    """The request cannot be met on this host now; the message says why in one line."""


def held(root: Path) -> Dict[str, str]:
    """uuid -> `job ID node N` for every GPU a live gpudeck assignment holds on this agent dir."""
    return {uuid: "job %s node %s" % holder for uuid, holder in live_holders(root).items()}


def assign(root: Path, node_dir: Path, request: Mapping[str, Any], nvml: Nvml) -> Dict[str, Any]:
    """Choose and record the node's GPUs; GpuShortage when there are not enough free ones."""
    count = int(request["count"])
    model = request.get("model")
    lock_fd = open_private(root / LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)  # held only for a look at NVML and one small write
        sample = nvml.sample(processes=True)
        if not sample.get("available"):
            raise GpuShortage("spec.gpus: %d GPU%s asked, but %s" % (count, _s(count), nvml.reason))
        gpus = [g for g in sample["gpus"] if isinstance(g.get("uuid"), str)]
        fitting = [g for g in gpus if _fits(g, model)]
        if not fitting:
            names = sorted({str(g.get("name")) for g in gpus})
            raise GpuShortage("spec.gpus: no %s GPU on this host (it has %s)" % (model, ", ".join(names)))
        live = live_holders(root)  # the holders of this host's GPUs only (registry.py)
        holders = {uuid: "job %s node %s" % holder for uuid, holder in live.items()}
        free: List[Dict[str, Any]] = []
        busy: List[str] = []
        for g in fitting:
            who = holders.get(g["uuid"]) or _foreign(g)
            if who is None:
                free.append(g)
            else:
                busy.append("GPU %s: %s" % (g["index"], who))
        if len(free) < count:
            raise GpuShortage(
                "spec.gpus: %d%s GPU%s asked, %d free on this host (%s)"
                % (count, " " + model if model else "", _s(count), len(free), "; ".join(busy))
            )
        chosen = free[:count]
        assignment = {
            "indices": [g["index"] for g in chosen],
            "uuids": [g["uuid"] for g in chosen],
            "names": [g.get("name") for g in chosen],
        }
        write_private_atomic(node_dir / ASSIGNMENT, json.dumps(assignment).encode("utf-8"))
        live.update((uuid, (node_dir.parent.name, node_dir.name)) for uuid in assignment["uuids"])
        write_index(root, live)
        return assignment
    finally:
        os.close(lock_fd)  # closing the descriptor lets the lock go


def with_assignment(env: Mapping[str, str], assignment: Mapping[str, Any]) -> Dict[str, str]:
    """The job's env given its GPUs (a restart's old assignment is replaced, not kept)."""
    out = dict(env)
    out["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in assignment["indices"])
    out["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA's numbering is then NVML's (the indices above)
    return out


def _fits(gpu: Mapping[str, Any], model: Optional[str]) -> bool:
    return model is None or model.lower() in str(gpu.get("name") or "").lower()


def _foreign(gpu: Mapping[str, Any]) -> Optional[str]:
    """Who uses a GPU no assignment holds: the first process NVML lists on it, else None."""
    for p in gpu.get("processes") or []:
        pid = p.get("pid")
        if isinstance(pid, int):
            return foreign_user(pid, p.get("user"))
    return None


def _s(n: int) -> str:
    return "" if n == 1 else "s"
