"""`gpudeck stop|kill|restart|rm|autostop JOB`: each answers once the job's processes are gone."""

from __future__ import annotations

import argparse
import time

from .. import actions
from ..actions import JobTarget
from ..session import Session


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop gracefully: stop signal, then SIGKILL after the grace period")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("--grace", type=float, default=None, help="seconds before SIGKILL (default: the job's, 60)")
    p = sub.add_parser("kill", help="SIGKILL every process of the job now")
    p.add_argument("job", help="job id, id prefix or name")
    p = sub.add_parser("restart", help="stop the job if live, then launch it again as a new job")
    p.add_argument("job", help="job id, id prefix or name")
    p = sub.add_parser("rm", help="delete an ended job's files on its hosts")
    p.add_argument("job", help="job id, id prefix or name")
    p = sub.add_parser("autostop", help="pause or resume a job's idle stop")
    p.add_argument("action", choices=["pause", "resume"])
    p.add_argument("job", help="job id, id prefix or name")


def _target(session: Session, ref: str) -> JobTarget:
    return JobTarget.of_job(actions.resolve(session, ref))


def _end(args: argparse.Namespace, session: Session, action: str) -> int:
    actions.check_grace(getattr(args, "grace", None))  # a usage error before any host is asked
    job = _target(session, args.job)
    start = time.monotonic()
    answers = actions.end(session, job, action, grace=getattr(args, "grace", None))
    took = time.monotonic() - start
    if job.watch is not None and job.watch.read_only:
        print(f"{job.id} ended the watch of {job.watch.path} in {took:.1f}s; the run itself was not touched (read-only)")
        return 0
    what = f" (the watched run, pid {job.watch.pid})" if job.watch is not None else ""
    print(f"{job.id} {actions.final_state(answers)}{what} in {took:.1f}s")
    return 0


def stop(args: argparse.Namespace, session: Session) -> int:
    return _end(args, session, "stop")


def kill(args: argparse.Namespace, session: Session) -> int:
    return _end(args, session, "kill")


def restart(args: argparse.Namespace, session: Session) -> int:
    print(actions.restart(session, session.store, _target(session, args.job)))
    return 0


def rm(args: argparse.Namespace, session: Session) -> int:
    job = _target(session, args.job)
    actions.remove(session, session.store, job)
    print(job.id)
    return 0


def autostop(args: argparse.Namespace, session: Session) -> int:
    job = _target(session, args.job)
    actions.set_autostop(session, job, paused=args.action == "pause")
    print(f"{job.id} idle stop {'paused' if args.action == 'pause' else 'resumed'}")
    return 0
