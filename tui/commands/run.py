"""`gpudeck run`: launch a command detached on a host; prints the job id alone on stdout."""

from __future__ import annotations

import argparse

from remote_agent.spec import DEFAULT_GRACE

from ..actions.hold import parse_hold_on_fail
from ..actions.launch import launch
from ..actions.options import LaunchOptions, job_env, parse_elastic, parse_gpus, parse_stall
from ..errors import EXIT_USAGE, GpudeckError
from ..managed.candidates import parse_fallback
from ..managed.network import check_at_run
from ..managed.records import DEFAULT_LOST_AFTER, Policy, parse_recover_on
from ..managed.submit import run_managed
from ..notify_targets import parse_notify
from ..queue.submit import Queued, submit
from ..session import LOCAL, Session
from .answer import add_json, launched, say
from .sync import add_sync_flags, progress_for, sync_options


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run", help="launch a command as a detached job", description="Launch CMD as a job. Prints its id."
    )
    p.add_argument("--host", help="host to run on (default: local); H1,H2,... places --nodes round-robin")
    p.add_argument(
        "--pool",
        metavar="H1,H2,...",
        help="hosts the job may run and scale on: nodes go to hosts of the "
        "pool, free GPUs first (unless --host pins them); kept for `scale`",
    )
    p.add_argument("--name", help="a name for people (default: from the command)")
    p.add_argument(
        "--workdir", help="working directory (default: current dir on local, login dir on SSH hosts)"
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V|K",
        help="set a variable; K alone takes the caller's value",
    )
    p.add_argument(
        "--env-file",
        action="append",
        default=[],
        metavar="FILE",
        help="set the variables of a dotenv file (KEY=value lines; --env wins over it); values are "
        "secrets, as --env's: never shown, stored or recorded",
    )
    p.add_argument(
        "--setup",
        action="append",
        default=[],
        metavar="LINE",
        help="shell line run before the command (e.g. conda activate)",
    )
    p.add_argument(
        "--requirements",
        metavar="FILE|auto|off",
        help="run in a Python environment built on the host from FILE (pip's format), cached and reused by "
        "every job asking the same; auto: the requirements.lock, uv.lock, requirements.txt or pyproject.toml "
        "found here (default: the host's `requirements`, else none)",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        help="seconds between the stop signal and SIGKILL (default 60)",
    )
    p.add_argument(
        "--pty",
        action="store_true",
        help="run the command with a pseudo-terminal as its output, so Rich and Keras bars draw every "
        "frame as for their user (the log then holds their redraws)",
    )
    p.add_argument(
        "--tensorboard",
        metavar="LOGDIR",
        help="also read the run's TensorBoard event files under LOGDIR (relative: to the work dir) "
        "as its points, for a framework that logs only there",
    )
    p.add_argument(
        "--no-logger-files",
        dest="logger_files",
        action="store_false",
        help="do not read the lightning_logs/ the run writes under its work dir (read by default)",
    )
    p.add_argument(
        "--budget",
        type=float,
        metavar="AMOUNT",
        help="stop gracefully when the job's cost reaches AMOUNT (warns at 80 %%)",
    )
    p.add_argument(
        "--price-per-hour",
        type=float,
        metavar="P",
        help="the host's price per hour for this job (default: the host's setting)",
    )
    # metavar is printed as is (no %-formatting); help is %-formatted, hence %% there only.
    p.add_argument(
        "--idle-stop",
        metavar="30m@10%+15m",
        help="stop when the job's GPUs stay under 10 %% for 30 min, not in its first 15 min (off: none; default: the host's setting)",
    )
    p.add_argument(
        "--output-cap",
        metavar="SIZE",
        help="keep at most SIZE of output.log (e.g. 500M, 2G; off: all): "
        "its head and tail stay, the middle goes once parsed (default: the host's output_cap, else 1G)",
    )
    p.add_argument("--nodes", type=int, default=1, metavar="N", help="run on N nodes, one job (default 1)")
    p.add_argument(
        "--queue",
        action="store_true",
        help="with --pool and --gpus: when the pool has not the GPUs free, wait in the queue (FIFO) and start "
        "once they are (the controller, `policy run`, is started for it)",
    )
    p.add_argument(
        "--priority", type=int, metavar="P", help="with --queue: higher starts first (default 0; -1000..1000)"
    )
    p.add_argument(
        "--hold-on-fail",
        metavar="DURATION",
        help="a job that fails keeps its node (dir, core files, env; a launched instance) for this long "
        "(30m, 2h) for debugging: `gpudeck ssh JOB`; `gpudeck stop JOB` ends it early",
    )
    p.add_argument(
        "--stall",
        metavar="DURATION",
        help="no progress for this long (90s, 10m; auto: from the job's own pace, at least 10 min; off) "
        "marks the job stalled (default auto)",
    )
    p.add_argument(
        "--stall-action",
        choices=["notify", "dump", "stop", "restart"],
        help="what a stall does (default notify: flag, journal, tell; dump: that, and the stacks of its "
        "Python processes, as gpudeck dump; stop; restart: stop it (its checkpoint) and start it again "
        "as a new job, at most 3 times along its chain; one-node jobs)",
    )
    p.add_argument(
        "--notify",
        metavar="EVENT,...",
        help="the events this job is told of to [notify]'s targets (failed, stalled, budget_stop, …; "
        "default: config.toml's, per host)",
    )
    p.add_argument(
        "--managed",
        action="store_true",
        help="the controller brings the job back from its checkpoint on another host when its host is "
        "lost or taken (preempted), or it fails (see --recover-on)",
    )
    p.add_argument(
        "--recover-on",
        metavar="WHAT",
        help="with --managed: preemption,host-lost,failure (default preemption,host-lost)",
    )
    p.add_argument("--max-recoveries", type=int, metavar="N", help="with --managed: then give up (default 3)")
    p.add_argument(
        "--fallback",
        metavar="H1,H2,…",
        help="with --managed: the hosts or cloud candidates PROVIDER:ZONE:TYPE:MARKET[:IMAGE] to go on, "
        "in order (default: its own)",
    )
    p.add_argument(
        "--lost-after",
        type=float,
        metavar="S",
        help="with --managed: seconds a host must stay unreachable to count as lost (default 60)",
    )
    p.add_argument(
        "--give-up-after",
        metavar="DURATION",
        help="with --managed: give up when no candidate could be had this long since the first refused "
        "launch (default 1h; refused candidates are retried after 1, 2, 4… min, at most 30)",
    )
    p.add_argument(
        "--gpus",
        metavar="N[:MODEL]",
        help="GPUs per node: the host gives the job N free ones (of MODEL, e.g. A100) and sets "
        "CUDA_VISIBLE_DEVICES; refused when it has not that many free (default: every GPU, as today)",
    )
    p.add_argument(
        "--nproc-per-node", type=int, default=1, metavar="K", help="torchrun processes per node (default 1)"
    )
    p.add_argument(
        "--launcher",
        choices=["torchrun", "none"],
        default=None,
        help="torchrun: gpudeck builds each node's torchrun line (default for --nodes > 1); none: CMD as is, "
        "with GPUDECK_NODE_RANK/NNODES/MASTER_ADDR/MASTER_PORT in its env",
    )
    p.add_argument(
        "--master-addr",
        metavar="ADDR",
        help="the first node's address as the others reach it (default: 127.0.0.1 on local; needed for SSH hosts)",
    )
    p.add_argument(
        "--master-port",
        type=int,
        metavar="P",
        help="rendezvous port (default: a free port on local, 29500 on SSH hosts)",
    )
    p.add_argument(
        "--elastic",
        metavar="MIN:MAX",
        help="torchrun's elastic rendezvous: `scale +1` starts one more node "
        "that joins, `scale -1` stops one and the rest re-form (MIN..MAX nodes)",
    )
    p.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="s3://BUCKET/PREFIX:PATH[:mount]",
        help="objects under PREFIX at PATH (in the workdir, or absolute) before CMD starts: fetched by the host "
        "into its cache from URLs presigned here (only what changed is fetched again); :mount mounts it "
        "with the host's s3fs or rclone instead (repeatable)",
    )
    p.add_argument(
        "--sync",
        nargs="?",
        const=".",
        metavar="DIR",
        help="run in an exact snapshot of DIR (default: the current directory) sent to the job's hosts "
        "(ignore rules as git's, plus .gpudeckignore); a restart or resize keeps that snapshot",
    )
    add_sync_flags(p)
    add_container_flags(p)
    add_slurm_flags(p)
    add_json(p, "id, name, state, hosts")
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- CMD [ARGS...]",
        help="the command and its arguments, after -- (run under bash -l in the workdir)",
    )


def options(args: argparse.Namespace) -> LaunchOptions:
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise GpudeckError("run: no command given (gpudeck run [OPTIONS] -- CMD [ARGS...])", EXIT_USAGE)
    pool = tuple(h.strip() for h in args.pool.split(",")) if args.pool is not None else ()
    hosts = tuple(h.strip() for h in args.host.split(",")) if args.host is not None else ()
    # with a pool, a --host list (even of one) pins the nodes; without --host the pool places them
    pinned = hosts if len(hosts) > 1 or (pool and hosts) else ()
    if args.stall_action == "restart" and ((args.nodes or 1) > 1 or len(hosts) > 1 or args.elastic):
        raise GpudeckError(
            "run: --stall-action restart: one-node jobs only (a multi-node job's other nodes are on "
            "other hosts; use stop, and restart it with r or gpudeck restart)",
            EXIT_USAGE,
        )
    return LaunchOptions(
        argv=tuple(argv),
        host=hosts[0] if hosts else pool[0] if pool else LOCAL,
        hosts=pinned,
        pool=pool,
        elastic=parse_elastic(args.elastic),
        nodes=args.nodes,
        nproc_per_node=args.nproc_per_node,
        launcher=args.launcher,
        master_addr=args.master_addr,
        master_port=args.master_port,
        name=args.name,
        workdir=args.workdir,
        env=job_env(args.env_file, args.env),
        setup=tuple(args.setup),
        requirements=args.requirements,
        grace=args.grace,
        pty=args.pty,
        tensorboard=args.tensorboard,
        logger_files=args.logger_files,
        budget=args.budget,
        price_per_hour=args.price_per_hour,
        idle_stop=args.idle_stop,
        output_cap=args.output_cap,
        data=tuple(args.data),
        sync=sync_options(args, args.sync, hosts[0] if hosts else pool[0] if pool else LOCAL)
        if args.sync is not None
        else None,
        image=args.image,
        container_runtime=args.runtime,
        mounts=tuple(args.mount),
        shm_size=args.shm_size,
        ipc=args.ipc,
        gpus=parse_gpus(args.gpus),
        stall=parse_stall(args.stall, args.stall_action),
        hold_on_fail=parse_hold_on_fail(args.hold_on_fail),
        notify=parse_notify(args.notify),
        gpus_per_node=args.gpus_per_node,
        time_limit=args.time,
        time_warning=args.time_warning,
        partition=args.partition,
        account=args.account,
        qos=args.qos,
        sbatch_args=tuple(args.sbatch_arg),
    )


def add_slurm_flags(p: argparse.ArgumentParser) -> None:
    """Issue 30: on a Slurm host (`hosts add --slurm`) the nodes come from an sbatch allocation."""
    p.add_argument(
        "--gpus-per-node", type=int, metavar="G", help="Slurm hosts: GPUs per node (sbatch --gpus-per-node)"
    )
    p.add_argument(
        "--time", metavar="T", help="Slurm hosts: the time limit (sbatch --time: 2:00:00, 1-00:00…)"
    )
    p.add_argument(
        "--time-warning",
        type=int,
        metavar="S",
        help="Slurm hosts, with --time: S seconds before the limit every node stops and checkpoints "
        "(Slurm's --signal; default 120, 0: none)",
    )
    p.add_argument(
        "--partition",
        metavar="P",
        help="Slurm hosts: the partition (default: the host's partition, else Slurm's)",
    )
    p.add_argument(
        "--account",
        metavar="A",
        help="Slurm hosts: the account charged (default: the host's account, else Slurm's)",
    )
    p.add_argument("--qos", metavar="Q", help="Slurm hosts: the QOS (default: the host's qos, else Slurm's)")
    p.add_argument(
        "--sbatch-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="Slurm hosts: one more sbatch option, e.g. --sbatch-arg=--exclusive (repeatable)",
    )


def add_container_flags(p: argparse.ArgumentParser) -> None:
    """Issue 28: the command runs inside a container of IMAGE on its host (README: Containers)."""
    p.add_argument("--image", help="run the command in a container of IMAGE (default: the host's `image`)")
    p.add_argument(
        "--runtime",
        choices=["auto", "docker", "podman"],
        help="the container runtime (default: the host's container_runtime, else auto: podman, then docker)",
    )
    p.add_argument(
        "--mount",
        action="append",
        default=[],
        metavar="HOST:CONTAINER[:ro]",
        help="bind-mount a host path into the container (data, caches); the workdir always is",
    )
    p.add_argument(
        "--shm-size",
        metavar="SIZE",
        help="/dev/shm for DataLoader workers (e.g. 16g; default: half the host's memory)",
    )
    p.add_argument(
        "--ipc", choices=["private", "host"], help="host: share the host's IPC namespace and /dev/shm"
    )


def run(args: argparse.Namespace, session: Session) -> int:
    opts = options(args)
    if opts.sync is None and (args.include or args.include_git or args.max_file_size is not None):
        raise GpudeckError("run: --include, --include-git and --max-file-size go with --sync", EXIT_USAGE)
    if args.queue:
        return _queue(args, session, opts)
    if args.managed:
        return _managed(args, session, opts)
    if (
        args.recover_on
        or args.max_recoveries is not None
        or args.fallback
        or args.lost_after is not None
        or args.give_up_after is not None
    ):
        raise GpudeckError(
            "run: --recover-on/--max-recoveries/--fallback/--lost-after/--give-up-after go with --managed",
            EXIT_USAGE,
        )
    if args.priority is not None:
        raise GpudeckError("run: --priority goes with --queue", EXIT_USAGE)
    job = launch(session, session.store, opts, progress_for=None if args.json else progress_for)
    say(args.json, launched(job), job.id)
    return 0


def _managed(args: argparse.Namespace, session: Session, opts: LaunchOptions) -> int:
    try:
        recover_on = parse_recover_on(args.recover_on)
    except ValueError as exc:
        raise GpudeckError(str(exc), EXIT_USAGE) from None
    try:  # hosts and cloud candidates (PROVIDER:ZONE:TYPE:MARKET), each checked now
        fallback = parse_fallback(args.fallback, session.hosts())
        give_up_after, notes = check_at_run(fallback, opts, session.settings.cloud, args.give_up_after)
    except ValueError as exc:
        raise GpudeckError(str(exc), EXIT_USAGE) from None
    for note in notes:
        session.notice(note)
    policy = Policy(
        recover_on,
        3 if args.max_recoveries is None else args.max_recoveries,
        fallback,
        DEFAULT_LOST_AFTER if args.lost_after is None else args.lost_after,
        give_up_after,
    )
    job, controller = run_managed(session, session.store, opts, policy)
    if controller:
        session.notice(f"managed: started the controller (job {controller}, `gpudeck stop policy` ends it)")
    say(args.json, dict(launched(job), managed=True), job.id)
    return 0


def _queue(args: argparse.Namespace, session: Session, opts: LaunchOptions) -> int:
    got = submit(session, session.store, opts, priority=args.priority or 0)
    if isinstance(got, Queued):
        obj = {
            "id": got.entry.id,
            "name": got.entry.name,
            "state": "queued",
            "ahead": got.ahead,
            "why": got.reason,
        }
        if got.controller:
            session.notice(
                f"queue: started the controller (job {got.controller}, `gpudeck stop policy` ends it)"
            )
        session.notice(f"{got.entry.id} queued: {got.reason}")
        say(args.json, obj, got.entry.id)
        return 0
    say(args.json, launched(got), got.id)
    return 0
