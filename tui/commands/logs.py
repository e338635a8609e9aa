"""`gpudeck logs JOB [-f]`: the job's output bytes exactly as printed, each exactly once."""

from __future__ import annotations

import argparse
import base64
import signal
import sys
import time

from ..actions import Job, resolve
from ..errors import EXIT_NO_SUCH_JOB, GpudeckError
from ..session import Session, print_status

POLL_SECONDS = 0.2
CHUNK = 1 << 20
FOLLOW_TIMEOUT = 7 * 86400.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("logs", help="print a job's output (-f: follow until it ends)")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("-f", "--follow", action="store_true", help="follow; exit with the job's exit code when it ends")
    p.add_argument("--node", default=None, help="which node's output (default: the first)")


def job_exit_code(obj: dict) -> int:
    """The code a shell would have seen: the exit code, else 128 + the signal's number."""
    if isinstance(obj.get("exit_code"), int):
        return obj["exit_code"]
    name = obj.get("signal")
    if name and hasattr(signal, name):
        return 128 + int(getattr(signal, name))
    return {"killed": 137, "stopped": 143}.get(obj.get("state", ""), 1)


def run(args: argparse.Namespace, session: Session) -> int:
    if args.follow:
        session.on_status = print_status  # a follower reconnects: say so, and why
    job = resolve(session, args.job)
    node = _pick_node(job, args.node)
    host, out = node["host"], sys.stdout.buffer
    offset = 0
    wait = FOLLOW_TIMEOUT if args.follow else 30.0
    while True:
        # Following waits out any outage: the request is repeated on the next connection, from
        # the same byte offset, so every byte is printed once however often the link breaks.
        try:
            chunk = session.request(host, "logs", timeout=wait, job=job.id, node=node["node"], offset=offset, limit=CHUNK)
        except GpudeckError:
            if args.follow and _final(session, host, job, node, wait) is None:
                raise _removed(job) from None
            raise
        data = base64.b64decode(chunk["data"])
        if data:
            out.write(data)
            out.flush()
            offset += len(data)
        if offset < chunk["size"]:
            continue  # more already there: no need to wait
        if not args.follow:
            return 0
        if chunk["done"]:
            final = _final(session, host, job, node, wait)
            if final is None:
                raise _removed(job)
            return job_exit_code(final)
        time.sleep(POLL_SECONDS)


def _final(session: Session, host: str, job: Job, node: dict, wait: float) -> dict | None:
    """The node's job object now, or None when it is gone (`gpudeck rm` while we followed)."""
    jobs = session.request(host, "jobs", timeout=wait)["jobs"]
    return next((o for o in jobs if o["id"] == job.id and o["node"] == node["node"]), None)


def _removed(job: Job) -> GpudeckError:
    return GpudeckError(f"job {job.id} was removed while its log was followed", EXIT_NO_SUCH_JOB)


def _pick_node(job: Job, wanted: str | None) -> dict:
    if wanted is None:
        return job.first
    for node in job.nodes:
        if node["node"] == wanted:
            return node
    raise GpudeckError(f"job {job.id} has no node {wanted!r} (nodes: {', '.join(n['node'] for n in job.nodes)})", EXIT_NO_SUCH_JOB)
