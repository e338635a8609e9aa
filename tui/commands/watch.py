"""`gpudeck watch [--host H] PATH`: follow the log file of a run gpudeck did not start as a read-only
job (ps, logs, metrics, cost and the TUI show it); prints the job id alone on stdout."""

from __future__ import annotations

import argparse

from remote_agent.spec import DEFAULT_GRACE

from ..actions.options import usage
from ..actions.slurm_launch import is_slurm_host
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
        nargs="?",
        metavar="PATH",
        help="the log file (it may not exist yet); relative: to the current dir "
        "on local, to the login dir on SSH hosts",
    )
    p.add_argument("--host", default=LOCAL, help="the host the file is on (default: local)")
    p.add_argument(
        "--slurm-job",
        metavar="ID",
        help="on a Slurm host (--host): follow that Slurm job's output file (from scontrol, %%N resolved) "
        "in place of PATH; the watch ends with the job",
    )
    p.add_argument("--name", help="a name for people (default: from the file's name)")
    p.add_argument(
        "--pid", type=int, metavar="P", help="the run's process: stop/kill then act on it and its children"
    )
    p.add_argument("--from-end", action="store_true", help="skip what the file holds now (a huge log)")
    p.add_argument(
        "--tensorboard",
        metavar="LOGDIR",
        help="also (or, without PATH, only) read the run's TensorBoard event files under LOGDIR, "
        "recursively, as its points; relative: as PATH is",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        help="with --pid: seconds between the stop signal and SIGKILL (default 60)",
    )
    add_json(p, "id, name, state, hosts")


def run(args: argparse.Namespace, session: Session) -> int:
    path, name = args.path, args.name
    if args.slurm_job is not None:
        path, name = slurm_output(session, args)
    opts = WatchOptions(
        path=path,
        host=args.host,
        name=name,
        pid=args.pid,
        from_end=args.from_end,
        grace=args.grace,
        slurm_job=args.slurm_job,
        tensorboard=args.tensorboard,
    )
    job = watch(session, session.store, opts)
    say(args.json, launched(job), job.id)
    return 0


def slurm_output(session: Session, args: argparse.Namespace) -> tuple[str, str]:
    """(the output file, the watch's name) of `--slurm-job ID`, as the login node's agent finds them."""
    if args.path:
        raise usage("watch: PATH or --slurm-job ID, not both")
    if not args.slurm_job.isdigit():
        raise usage(f"--slurm-job {args.slurm_job}: expected a Slurm job id (digits)")
    if args.pid is not None:
        raise usage("--pid: not with --slurm-job (the job's processes are on compute nodes)")
    if not is_slurm_host(args.host):
        raise usage(
            f"--slurm-job: host {args.host} is not a Slurm host (gpudeck hosts add NAME TARGET --slurm)"
        )
    found = session.request(args.host, "slurm", output_of=args.slurm_job)
    return str(found["path"]), args.name or f"slurm-{args.slurm_job}"
