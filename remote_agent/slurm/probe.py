"""The `slurm` op: what a login node offers gpudeck -- Slurm's tools on PATH, its version, the
partitions -- and the one line naming what is missing."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List

from .commands import SlurmError, checked, missing_tools, user, version
from .queue import squeue

_GPUS = re.compile(r"gpu(?::[^:(,]+)?:(\d+)")
DOWN_STATES = ("down", "drain", "fail", "not_responding", "unknown", "inval", "future", "maint")


def gpu_count(gres: str) -> int:
    return sum(int(n) for n in _GPUS.findall(gres))


def partition_gpus() -> Dict[str, Dict[str, int]]:
    """GPUs per partition from `sinfo -N` (one line per node and partition): total, allocated, idle,
    down (a node down, drained or failing counts all of its GPUs down)."""
    out = checked(["sinfo", "-h", "-N", "-O", "NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|"])
    found: Dict[str, Dict[str, int]] = {}
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) < 5 or not parts[1].strip():
            continue
        partition = parts[1].strip().rstrip("*")
        total, used = gpu_count(parts[3]), gpu_count(parts[4])
        counts = found.setdefault(partition, {"total": 0, "allocated": 0, "idle": 0, "down": 0})
        counts["total"] += total
        if any(word in parts[2].lower() for word in DOWN_STATES):
            counts["down"] += total
        else:
            counts["allocated"] += used
            counts["idle"] += max(total - used, 0)
    return found


def partitions() -> List[Dict[str, Any]]:
    out = checked(["scontrol", "show", "partition", "-o"])
    found = []
    for line in out.splitlines():
        fields = dict(t.partition("=")[::2] for t in line.split() if "=" in t)
        if fields.get("PartitionName"):
            found.append(
                {
                    "name": fields["PartitionName"],
                    "state": fields.get("State"),
                    "nodes": fields.get("Nodes"),
                    "total_nodes": int(fields["TotalNodes"])
                    if fields.get("TotalNodes", "").isdigit()
                    else None,
                    "default": fields.get("Default") == "YES",
                    "max_time": fields.get("MaxTime"),
                }
            )
    return found


def slurm_report(root: Path) -> Dict[str, Any]:
    """`missing`: one line, or None when the login node has all gpudeck needs."""
    missing = missing_tools()
    report: Dict[str, Any] = {
        "tools_missing": missing,
        "version": None,
        "partitions": [],
        "queue": [],
        "user": user(),
        "missing": None,
    }
    problems = []
    if missing:
        problems.append("not on PATH: %s" % ", ".join(missing))
    else:
        report["version"] = version()
        try:
            report["partitions"] = partitions()
            gpus = partition_gpus() if shutil.which("sinfo") else {}
            for partition in report["partitions"]:
                partition["gpus"] = gpus.get(partition["name"])
            report["queue"] = [job.to_wire() for job in squeue().values()]
        except SlurmError as exc:
            problems.append(str(exc))
    if not os.access(str(root), os.W_OK):
        problems.append("the agent dir %s is not writable" % root)
    report["missing"] = "; ".join(problems) or None
    report["agent_dir"] = str(root)
    return report
