"""A Slurm cluster at a glance (issue 30), as words: its partitions with their GPUs idle, allocated
and down, and the user's queue with the reasons jobs wait -- from the login node's `slurm` report.
Pure: `gpudeck hosts show` prints these lines, the TUI's host panel shows them."""

from __future__ import annotations

from typing import Any


def show_lines(host: str, report: dict[str, Any]) -> list[str]:
    out = [f"{host}: Slurm {report.get('version') or '?'} (user {report.get('user')})"]
    if report.get("missing"):
        out.append(f"  missing: {report['missing']}")
    for p in report.get("partitions") or []:
        gpus = p.get("gpus") or {}
        gpu_text = (
            f"GPUs {gpus.get('total')}: {gpus.get('idle')} idle, {gpus.get('allocated')} allocated, {gpus.get('down')} down"
            if gpus
            else "no GPUs"
        )
        out.append(
            f"  partition {p.get('name')}{'*' if p.get('default') else ''} {p.get('state')}: "
            f"{p.get('total_nodes')} nodes, {gpu_text}"
        )
    queue = report.get("queue") or []
    out.append(f"  your queue: {len(queue)} job{'s' * (len(queue) != 1)}")
    for job in queue:
        why = f" ({job['reason']})" if job.get("reason") else ""
        start = (
            f", expected start {job['start']}" if job.get("state") == "PENDING" and job.get("start") else ""
        )
        where = f" on {job['nodes']}" if job.get("nodes") else ""
        out.append(f"    {job.get('job_id')} {job.get('state')}{why}{where}{start}")
    return out
