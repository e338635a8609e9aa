"""`gpudeck gc [--host H]`: collect the hosts' code stores: snapshots not used in the last N days
(and no live job's), then the blobs no snapshot names."""

from __future__ import annotations

import argparse
import json
import math

from ..actions.node_spec import host_entry
from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import hosts_path
from ..printable import warn
from ..session import Session

DEFAULT_KEEP_DAYS = 7.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "gc",
        help="remove old code snapshots and their files from hosts (never a live job's)",
        description="Remove the code snapshots not used in the last N days (hosts.toml "
        "code_keep_days, default 7), except those of jobs not ended, then every stored file no "
        "kept snapshot names.",
    )
    p.add_argument("--host", metavar="H1,H2,...", help="the hosts to collect (default: every host)")
    p.add_argument("--keep-days", type=float, metavar="N", help="keep snapshots used in the last N days")
    p.add_argument("--json", action="store_true", help="one JSON object per host")


def keep_days(args: argparse.Namespace, host: str) -> float:
    if args.keep_days is not None:
        if not math.isfinite(args.keep_days) or args.keep_days < 0:
            raise GpudeckError(f"--keep-days {args.keep_days:g}: a number of days >= 0", EXIT_USAGE)
        return float(args.keep_days)
    value = host_entry(host).extra.get("code_keep_days", DEFAULT_KEEP_DAYS)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise GpudeckError(
            f"{hosts_path()}: [hosts.{host}] code_keep_days: expected a number of days >= 0, got {value!r}",
            EXIT_USAGE,
        )
    return float(value)


def run(args: argparse.Namespace, session: Session) -> int:
    hosts = [h.strip() for h in args.host.split(",")] if args.host else session.hosts()
    code = 0
    for host in hosts:
        days = keep_days(args, host)
        try:
            done = session.request(host, "code_gc", timeout=300.0, keep_days=days)
        except GpudeckError as exc:
            if args.host:
                raise
            warn(f"gpudeck: skipping {host}: {exc}")
            code = code or exc.code
            continue
        if args.json:
            print(json.dumps(dict(done, host=host, keep_days=days)))
        else:
            print(
                f"{host}: removed {done['snapshots_removed']} snapshots, {done['blobs_removed']} files "
                f"({done['bytes_freed'] / 1e6:.1f} MB); kept {done['snapshots_kept']} "
                f"({done['live']} of live jobs, the rest used in the last {days:g} days)"
            )
    return code
