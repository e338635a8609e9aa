"""`gpudeck hosts check NAME`: what a host can run before a run fails there -- its GPUs and driver,
and each container runtime's version and whether it can pass GPUs (issue 28)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import host_fields
from ..printable import printable
from ..session import Session
from .hosts import probe


def check(args: argparse.Namespace, session: Session) -> int:
    if args.name not in session.hosts():
        raise GpudeckError(f"unknown host {args.name!r} (see `gpudeck hosts`)", EXIT_USAGE)
    found = probe(session, args.name)
    if not found["reachable"]:
        raise GpudeckError(f"host {args.name}: {found['error']}")
    runtimes: dict[str, Any] = session.request(args.name, "containers", timeout=60.0).get("runtimes") or {}
    health = gpu_health(session.request(args.name, "gpus", timeout=60.0)) if found["gpus"] else []
    slurm = None
    if isinstance(host_fields(args.name).get("slurm"), dict):  # a Slurm login node (issue 30)
        from .hosts_slurm import slurm_report

        slurm = slurm_report(session, args.name)
    if args.json:
        print(
            json.dumps(
                {**found, "container_runtimes": runtimes, "slurm": slurm, "gpu_health": health}, indent=2
            )
        )
        return 0
    for line in lines(found, runtimes):
        print(printable(line))
    for g in health:  # XID events and uncorrected ECC errors (remote_agent/probes/gpuhealth.py)
        print(printable(f"  GPU {g['index']} ({g['uuid']}): {g['flag']}"))
    if slurm is not None:
        from .hosts_slurm import describe

        missing = f" -- missing: {slurm['missing']}" if slurm.get("missing") else ""
        print(printable(f"  {describe(slurm)}{missing}"))
    return 0


def gpu_health(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The GPUs the agent flags (`health.flag` in its `gpus` answer): {index, uuid, flag}."""
    out = []
    for g in sample.get("gpus") or []:
        health = g.get("health") if isinstance(g, dict) else None
        if isinstance(health, dict) and isinstance(health.get("flag"), str) and health["flag"]:
            out.append({"index": g.get("index"), "uuid": g.get("uuid"), "flag": health["flag"][:300]})
    return out


def lines(found: dict[str, Any], runtimes: dict[str, Any]) -> list[str]:
    gpus = found["gpus"]
    out = [
        f"{found['name']}: {found.get('hostname')} agent {found.get('agent_version')}",
        f"  GPUs: {len(gpus)}"
        + (f" (driver {found.get('driver_version')}, CUDA {found.get('cuda_version')})" if gpus else "")
        + (f" -- {found['gpu_reason']}" if not gpus and found.get("gpu_reason") else ""),
    ]
    for name in ("podman", "docker"):
        info = runtimes.get(name)
        if not isinstance(info, dict):
            out.append(f"  {name}: not installed")
            continue
        passing = f"GPUs: {info.get('gpus_how')}" if info.get("gpus") else f"no GPUs: {info.get('gpus_how')}"
        out.append(f"  {name} {info.get('version') or '?'}: {passing}")
    return out
