"""The `slurm` op: what a login node offers gpudeck -- Slurm's tools on PATH, its version, the
partitions -- and the one line naming what is missing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List

from .commands import SlurmError, checked, missing_tools, version


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
    report: Dict[str, Any] = {"tools_missing": missing, "version": None, "partitions": [], "missing": None}
    problems = []
    if missing:
        problems.append("not on PATH: %s" % ", ".join(missing))
    else:
        report["version"] = version()
        try:
            report["partitions"] = partitions()
        except SlurmError as exc:
            problems.append(str(exc))
    if not os.access(str(root), os.W_OK):
        problems.append("the agent dir %s is not writable" % root)
    report["missing"] = "; ".join(problems) or None
    report["agent_dir"] = str(root)
    return report
