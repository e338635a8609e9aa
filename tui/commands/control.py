"""`gpudeck stop|kill|restart|rm JOB`: each answers once the job's processes are gone."""

from __future__ import annotations

import argparse
import time

from remote_agent.names import new_job_id

from ..errors import CliError
from ..jobref import Job, resolve
from ..session import Session
from ..store import JobRecord

STOP_MARGIN = 60.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop gracefully: stop signal, then SIGKILL after the grace period")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("--grace", type=float, default=None, help="seconds before SIGKILL (default: the job's, 60)")
    p = sub.add_parser("kill", help="SIGKILL every process of the job now")
    p.add_argument("job")
    p = sub.add_parser("restart", help="stop the job if live, then launch it again as a new job")
    p.add_argument("job")
    p = sub.add_parser("rm", help="delete an ended job's files on its hosts")
    p.add_argument("job")
    p = sub.add_parser("autostop", help="pause or resume a job's idle stop")
    p.add_argument("action", choices=["pause", "resume"])
    p.add_argument("job")


def end_job(session: Session, job: Job, action: str, grace: float | None) -> Job:
    wait = (grace if grace is not None else max(float(n.get("grace") or 60) for n in job.nodes)) + STOP_MARGIN
    for node in job.nodes:
        args = {"job": job.id, "node": node["node"]}
        if action == "stop" and grace is not None:
            args["grace"] = grace
        final = session.request(node["host"], action, timeout=wait, **args)
        node.update(final)
    return job


def stop(args: argparse.Namespace, session: Session) -> int:
    if args.grace is not None and args.grace < 0:
        raise CliError("--grace: must be >= 0 seconds")
    start = time.monotonic()
    job = end_job(session, resolve(session, args.job), "stop", args.grace)
    print(f"{job.id} {job.state} in {time.monotonic() - start:.1f}s")
    return 0


def kill(args: argparse.Namespace, session: Session) -> int:
    start = time.monotonic()
    job = end_job(session, resolve(session, args.job), "kill", None)
    print(f"{job.id} {job.state} in {time.monotonic() - start:.1f}s")
    return 0


def restart(args: argparse.Namespace, session: Session) -> int:
    job = resolve(session, args.job)
    if not job.terminal:
        end_job(session, job, "stop", None)
    new_id = new_job_id()
    nodes = []
    for node in job.nodes:
        session.request(node["host"], "restart", timeout=60.0, job=job.id, node=node["node"], new_id=new_id)
        nodes.append({"host": node["host"], "node": node["node"]})
    session.store.record_job(
        JobRecord(id=new_id, name=job.name, created_at=time.time(), nodes=nodes, argv=job.first.get("argv") or [], restart_of=job.id)
    )
    print(new_id)
    return 0


def rm(args: argparse.Namespace, session: Session) -> int:
    job = resolve(session, args.job)
    if not job.terminal:
        raise CliError(f"job {job.id} is {job.state}: stop or kill it first")
    for node in job.nodes:
        session.request(node["host"], "rm", job=job.id, node=node["node"])
    session.store.remove_job(job.id)
    print(job.id)
    return 0


def autostop(args: argparse.Namespace, session: Session) -> int:
    job = resolve(session, args.job)
    for node in job.nodes:
        session.request(node["host"], "autostop", job=job.id, node=node["node"], paused=args.action == "pause")
    print(f"{job.id} idle stop {'paused' if args.action == 'pause' else 'resumed'}")
    return 0
