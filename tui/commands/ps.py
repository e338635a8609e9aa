"""`gpudeck ps` lists jobs; `gpudeck inspect` shows one whole, with a failure's cause and last lines."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import EXIT_HOSTKEY, CliError
from ..format import number, runtime, table
from ..jobref import Job, list_jobs, resolve
from ..session import Session


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ps", help="list jobs (live ones; --all for every job)")
    p.add_argument("--json", action="store_true", help="a JSON list of job objects")
    p.add_argument("--all", "-a", action="store_true", help="include ended jobs")
    p = sub.add_parser("inspect", help="one job in full: state, cause, last output lines")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("--json", action="store_true")


def state_text(job: Job) -> str:
    first = job.first
    if job.state in ("failed", "exited") and first.get("exit_code") is not None:
        return f"{job.state}({first['exit_code']})"
    if first.get("signal"):
        return f"{job.state}({first['signal']})"
    return job.state


def run(args: argparse.Namespace, session: Session) -> int:
    skipped: list[CliError] = []
    jobs = [j for j in list_jobs(session, skipped) if args.all or not j.terminal]
    for exc in skipped:
        print(f"gpudeck: skipping a host: {exc}", file=sys.stderr)
    # A host down is news, not failure; an untrusted or changed host key is a refusal (its own code).
    code = next((exc.code for exc in skipped if exc.code == EXIT_HOSTKEY), 0)
    if args.json:
        print(json.dumps([j.to_json() for j in jobs], indent=2))
        return code
    rows = []
    for job in jobs:
        last = job.first.get("last") or {}
        hosts = ",".join(sorted({n["host"] for n in job.nodes}))
        note = (job.first.get("cause") if job.state == "failed" else job.first.get("reason")) or ""
        if note == "user":
            note = ""
        rows.append(
            [job.id, job.name, hosts, state_text(job), runtime(job.first.get("started_at"), job.first.get("ended_at")),
             number(last.get("step")), number(last.get("loss")), note]
        )
    print(table(["ID", "NAME", "HOST", "STATE", "RUNTIME", "STEP", "LOSS", "WHY"], rows))
    return code


def inspect(args: argparse.Namespace, session: Session) -> int:
    job = resolve(session, args.job)
    if args.json:
        obj = job.to_json()
        obj["tail"] = job.first.get("tail")
        print(json.dumps(obj, indent=2))
        return 0
    first = job.first
    print(f"{job.id}  {job.name}  {state_text(job)}")
    print(f"  command: {' '.join(first.get('argv') or [])}")
    print(f"  workdir: {first.get('workdir')}")
    for node in job.nodes:
        print(f"  node {node['node']} on {node['host']}: {node['state']} pid={node.get('pid')}")
    if first.get("restart_of"):
        print(f"  restart of: {first['restart_of']}")
    if first.get("cause"):
        print(f"  cause: {first['cause']}")
    if first.get("reason"):
        print(f"  stopped by: {first['reason']}")
    if first.get("tail"):
        print("  last output:")
        for line in first["tail"][-10:]:
            print(f"    {line}")
    return 0
