"""What a Slurm login node offers (issue 30): `hosts add --slurm` and `hosts check` ask its agent's
`slurm` op and say, in one line, what is missing -- or Slurm's version and partitions."""

from __future__ import annotations

from typing import Any

from ..errors import EXIT_HOST, GpudeckError
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
