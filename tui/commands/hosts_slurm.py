"""What a Slurm login node offers (issue 30): `hosts add --slurm` and `hosts check` ask its agent's
`slurm` op and say, in one line, what is missing -- or Slurm's version and partitions."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import EXIT_HOST, EXIT_USAGE, GpudeckError
from ..fleet.cluster import show_lines
from ..hosts_file import host_fields
from ..printable import printable
from ..session import Session


def slurm_report(session: Session, host: str) -> dict[str, Any]:
    report: dict[str, Any] = session.request(host, "slurm", timeout=60.0)
    return report


def describe(report: dict[str, Any]) -> str:
    parts = []
    for p in report.get("partitions") or []:
        nodes = p.get("total_nodes")
        parts.append(
            f"{p.get('name')}{'*' if p.get('default') else ''} ({nodes} node{'s' * (nodes != 1)}, {p.get('state')})"
        )
    return f"Slurm {report.get('version') or '?'}, partitions: {', '.join(parts) or 'none'}"


def check_slurm(session: Session, host: str, added: bool = False) -> str:
    """The line to print; GpudeckError (EXIT_HOST) naming what is missing."""
    report = slurm_report(session, host)
    if report.get("missing"):
        again = f" (host {host} is added; run this again once fixed)" if added else ""
        raise GpudeckError(f"host {host}: Slurm: {report['missing']}{again}", EXIT_HOST)
    return printable(f"{host}: {describe(report)}; agent dir {report.get('agent_dir')}")


def show(args: argparse.Namespace, session: Session) -> int:
    """`gpudeck hosts show NAME`: a Slurm cluster at a glance -- partitions with their GPUs idle,
    allocated and down (sinfo), and this user's queue with the reasons jobs wait."""
    if args.name not in session.hosts():
        raise GpudeckError(f"unknown host {args.name!r} (see `gpudeck hosts`)", EXIT_USAGE)
    if not isinstance(host_fields(args.name).get("slurm"), dict):
        raise GpudeckError(
            f"hosts show: {args.name} is not a Slurm host (gpudeck hosts add --slurm)", EXIT_USAGE
        )
    report = slurm_report(session, args.name)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for line in show_lines(args.name, report):
        print(printable(line))
    return 0
