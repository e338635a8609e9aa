"""`gpudeck watch [--host H] PATH`: follow the log file of a run gpudeck did not start as a read-only
job (ps, logs, metrics, cost and the TUI show it); prints the job id alone on stdout."""

from __future__ import annotations

import argparse

from remote_agent.spec import DEFAULT_GRACE

from ..actions.watch import WatchOptions, watch
from ..session import LOCAL, Session
from .answer import add_json, launched, say


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "watch",
        help="follow the log file of a run gpudeck did not start (tmux, nohup, a scheduler)",
        description="Follow PATH as a read-only job: parsed, journaled and charted like any job, "
        "through log rotation and truncation. `gpudeck stop` ends the watch, never the "
        "run, unless --pid names the run's process. Prints the job id.",
    )
    p.add_argument(
        "path",
        metavar="PATH",
        help="the log file (it may not exist yet); relative: to the current dir "
        "on local, to the login dir on SSH hosts",
    )
    p.add_argument("--host", default=LOCAL, help="the host the file is on (default: local)")
    p.add_argument("--name", help="a name for people (default: from the file's name)")
    p.add_argument(
        "--pid", type=int, metavar="P", help="the run's process: stop/kill then act on it and its children"
    )
    p.add_argument("--from-end", action="store_true", help="skip what the file holds now (a huge log)")
    p.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        help="with --pid: seconds between the stop signal and SIGKILL (default 60)",
    )
    add_json(p, "id, name, state, hosts")


def run(args: argparse.Namespace, session: Session) -> int:
    opts = WatchOptions(
        path=args.path, host=args.host, name=args.name, pid=args.pid, from_end=args.from_end, grace=args.grace
    )
    job = watch(session, session.store, opts)
    say(args.json, launched(job), job.id)
    return 0
