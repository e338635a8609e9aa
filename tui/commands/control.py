"""`gpudeck stop|kill|restart|rm|autostop JOB`: each answers once the job's processes are gone.
`stop` of a failed job held for debugging (--hold-on-fail) ends the hold instead."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .. import paths
from ..actions import control, find, options
from ..actions.control import JobTarget
from ..actions.hold import held_until
from ..errors import EXIT_NO_SUCH_JOB, GpudeckError
from ..session import Session
from .answer import add_json, say

# stop/kill --json: the state the job ended in (null for a read-only watch: the run was not touched),
# how long it took, and for a watch with --pid the run's pid
# already_ended: true when every node had ended before the request (nothing was stopped)
ENDED = "id, state, seconds, run_touched, pid, already_ended"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("stop", help="stop gracefully: stop signal, then SIGKILL after the grace period")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument(
        "--grace", type=float, default=None, help="seconds before SIGKILL (default: the job's, 60)"
    )
    add_json(p, ENDED)
    p = sub.add_parser("kill", help="SIGKILL every process of the job now")
    p.add_argument("job", help="job id, id prefix or name")
    add_json(p, ENDED)
    p = sub.add_parser("restart", help="stop the job if live, then launch it again as a new job")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument(
        "--refresh-data",
        action="store_true",
        help="--data: list the prefixes again and take their current objects "
        "(default: the objects the job was launched with, which must be unchanged)",
    )
    add_json(p, "id (the new job's), restart_of")
    p = sub.add_parser("rm", help="delete an ended job's files on its hosts")
    p.add_argument("job", help="job id, id prefix or name")
    add_json(p, "id, removed")
    p = sub.add_parser("autostop", help="pause or resume a job's idle stop")
    p.add_argument(
        "action", choices=["pause", "resume"], help="pause: the idle stop waits; resume: it judges again"
    )
    p.add_argument("job", help="job id, id prefix or name")
    add_json(p, "id, idle_stop (paused or resumed)")


def _target(session: Session, ref: str) -> JobTarget:
    return JobTarget.of_job(find.resolve(session, ref))


def _end(args: argparse.Namespace, session: Session, action: str) -> int:
    options.check_grace(getattr(args, "grace", None))  # a usage error before any host is asked
    found = find.resolve(session, args.job)
    if action == "stop" and found.ended and release_hold(session, found):  # --hold-on-fail: let go
        obj = {"id": found.id, "state": found.state, "seconds": 0.0, "run_touched": False, "pid": None}
        say(args.json, dict(obj, already_ended=True), f"{found.id} is no longer held for debugging")
        return 0
    job = JobTarget.of_job(found)
    start = time.monotonic()
    answers = control.end(session, job, action, grace=getattr(args, "grace", None))
    took = time.monotonic() - start
    watched_only = job.watch if job.watch is not None and job.watch.read_only else None
    read_only = watched_only is not None
    state = None if read_only else control.final_state(answers)
    obj = {
        "id": job.id,
        "state": state,
        "seconds": round(took, 3),
        "run_touched": not read_only,
        "pid": job.watch.pid if job.watch is not None else None,
        "already_ended": already_ended(answers),
    }
    if obj["already_ended"] and watched_only is None:
        text = f"{job.id} had already {state}{how_it_ended(answers)}: nothing to {action}"
    elif watched_only is not None:
        text = f"{job.id} ended the watch of {watched_only.path} in {took:.1f}s; the run itself was not touched (read-only)"
    else:
        what = f" (the watched run, pid {job.watch.pid})" if job.watch is not None else ""
        text = f"{job.id} {state}{what} in {took:.1f}s"
        if any(isinstance(a, dict) and a.get("journal_behind") for a in answers):
            text += (
                "; its journal does not say so yet (the disk is full, or the output is still being read):"
                " ps shows its last journaled state until it does"
            )
    say(args.json, obj, text)
    return 0


def release_hold(session: Session, job: find.Job) -> bool:
    """End a failed job's --hold-on-fail early on each node that holds (the agent's `release`)."""
    nodes = [n for n in job.nodes if held_until([n])]
    for n in nodes:
        session.request(n["host"], "release", job=job.id, node=n["node"])
    return bool(nodes)


def already_ended(answers: list[dict[str, Any]]) -> bool:
    """Every node's agent said the job had ended before the request came."""
    return bool(answers) and all(isinstance(a, dict) and a.get("already_ended") for a in answers)


def how_it_ended(answers: list[dict[str, Any]]) -> str:
    """ " (exit code N)" or " (SIGNAL)" when the nodes agree on one, else ""."""
    codes = {(a.get("exit_code"), a.get("signal")) for a in answers}
    if len(codes) != 1:
        return ""
    code, sig = codes.pop()
    if isinstance(code, int):
        return f" (exit code {code})"
    return f" ({sig})" if isinstance(sig, str) else ""


def stop(args: argparse.Namespace, session: Session) -> int:
    return 0 if _dequeued(args, session) else _end(args, session, "stop")


def kill(args: argparse.Namespace, session: Session) -> int:
    return 0 if _dequeued(args, session) else _end(args, session, "kill")


def _dequeued(args: argparse.Namespace, session: Session) -> bool:
    """A job still waiting in the queue (`run --queue`) is taken out of it. By id at once; by name
    only when no host has a job of that name (a running `train` beside a queued one is the one meant)."""
    if not paths.queue_dir().is_dir():
        return False  # no job was ever queued here: the queue's code is not loaded
    from ..queue.entries import Queue

    queue = Queue()
    entries = queue.entries()
    if not any(e.name == args.job or e.id.startswith(args.job) for e in entries):
        return False  # nothing waits by that name (the common case: no host is asked twice)
    by_id = any(e.id == args.job or (len(args.job) >= 8 and e.id.startswith(args.job)) for e in entries)
    if not by_id:
        try:
            _target(session, args.job)
            return False  # a job on a host answers to it
        except GpudeckError as exc:
            if exc.code != EXIT_NO_SUCH_JOB:
                raise
    entry = queue.cancel(args.job)
    if entry is None:
        return False
    say(
        args.json,
        {"id": entry.id, "state": "cancelled", "queued": True},
        f"{entry.id} removed from the queue",
    )
    return True


def restart(args: argparse.Namespace, session: Session) -> int:
    job = _target(session, args.job)
    new_id = control.restart(session, session.store, job, refresh_data=args.refresh_data)
    say(args.json, {"id": new_id, "restart_of": job.id}, new_id)
    return 0


def rm(args: argparse.Namespace, session: Session) -> int:
    if _dequeued(args, session):
        return 0
    job = _target(session, args.job)
    control.remove(session, session.store, job)
    say(args.json, {"id": job.id, "removed": True}, job.id)
    return 0


def autostop(args: argparse.Namespace, session: Session) -> int:
    job = _target(session, args.job)
    control.set_autostop(session, job, paused=args.action == "pause")
    done = "paused" if args.action == "pause" else "resumed"
    say(args.json, {"id": job.id, "idle_stop": done}, f"{job.id} idle stop {done}")
    return 0
