"""`gpudeck gc [--host H]`: collect what the hosts keep for jobs, with one retention (N days): code
snapshots and their files, Python environments, and the data cache -- never what a live job uses."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from ..actions.node_spec import host_entry
from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import hosts_path
from ..printable import warn
from ..session import Session

DEFAULT_KEEP_DAYS = 7.0
KEEP_KEYS = ("keep_days", "code_keep_days")  # hosts.toml; the second is the older name, still read


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "gc",
        help="remove old code snapshots, environments and cached data from hosts (never a live job's)",
        description="On each host, remove what no job that has not ended uses and nothing used in "
        "the last N days (hosts.toml keep_days, default 7): code snapshots, then every stored file no "
        "kept snapshot names; Python environments (envs/<key>/; one being built is kept); data trees, "
        "then every cached object no kept tree holds.",
    )
    p.add_argument("--host", metavar="H1,H2,...", help="the hosts to collect (default: every host)")
    p.add_argument("--keep-days", type=float, metavar="N", help="keep what was used in the last N days")
    p.add_argument("--json", action="store_true", help="one JSON object per host")


def keep_days(args: argparse.Namespace, host: str) -> float:
    if args.keep_days is not None:
        if not math.isfinite(args.keep_days) or args.keep_days < 0:
            raise GpudeckError(f"--keep-days {args.keep_days:g}: a number of days >= 0", EXIT_USAGE)
        return float(args.keep_days)
    extra = host_entry(host).extra
    key = next((k for k in KEEP_KEYS if k in extra), KEEP_KEYS[0])
    value = extra.get(key, DEFAULT_KEEP_DAYS)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise GpudeckError(
            f"{hosts_path()}: [hosts.{host}] {key}: expected a number of days >= 0, got {value!r}",
            EXIT_USAGE,
        )
    return float(value)


def summary(host: str, done: dict[str, Any], days: float) -> str:
    code, envs, data = done["code"], done["envs"], done["data"]
    return (
        f"{host}: freed {done['bytes_freed'] / 1e6:.1f} MB (kept what live jobs use and what was used "
        f"in the last {days:g} days)\n"
        f"  code: removed {code['snapshots_removed']} snapshots, {code['blobs_removed']} files "
        f"({code['bytes_freed'] / 1e6:.1f} MB); kept {code['snapshots_kept']} ({code['live']} of live jobs)\n"
        f"  environments: removed {envs['removed']} ({envs['bytes_freed'] / 1e6:.1f} MB); kept "
        f"{envs['kept']} ({envs['live']} of live jobs, {envs['building']} being built)\n"
        f"  data: removed {data['trees_removed']} trees, {data['objects_removed']} objects "
        f"({data['bytes_freed'] / 1e6:.1f} MB); kept {data['trees_kept']} trees ({data['live']} of live "
        f"jobs), {data['objects_kept']} objects"
    )


def run(args: argparse.Namespace, session: Session) -> int:
    hosts = [h.strip() for h in args.host.split(",")] if args.host else session.hosts()
    code = 0
    for host in hosts:
        days = keep_days(args, host)
        try:
            done = session.request(host, "gc", timeout=600.0, keep_days=days)
        except GpudeckError as exc:
            if args.host:
                raise
            warn(f"gpudeck: skipping {host}: {exc}")
            code = code or exc.code
            continue
        if args.json:
            print(json.dumps(dict(done, host=host)))
        else:
            print(summary(host, done, days))
    return code
