"""`gpudeck export prometheus|tensorboard`: what gpudeck knows, in the formats other tools read."""

from __future__ import annotations

import argparse
import sys
import threading

from ..actions.options import usage
from ..session import Session, print_status


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "export",
        help="serve /metrics for Prometheus, or write a job's TensorBoard event files",
        description="Export what gpudeck knows: `prometheus` serves every host's GPUs and every job's "
        "loss, step, throughput, state and cost at /metrics (DCGM exporter names for GPUs).",
    )
    verbs = p.add_subparsers(dest="export_verb", metavar="FORMAT")
    pr = verbs.add_parser(
        "prometheus", help="serve /metrics (the Prometheus text format) for every host and job"
    )
    pr.add_argument(
        "--listen",
        default="127.0.0.1:9400",
        metavar="ADDR:PORT",
        help="where to serve (default 127.0.0.1:9400; port 0: any free port, printed)",
    )
    pr.add_argument("--once", action="store_true", help="print one exposition to stdout and exit")
    pr.add_argument(
        "--keep-ended",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds an ended job stays in /metrics after it ends (default 600), so series stay few",
    )

    tb = verbs.add_parser(
        "tensorboard",
        help="write a job's points (loss, lr, throughput, GPU util/memory, resizes) as TensorBoard event files",
    )
    tb.add_argument("job", help="job id, id prefix or name")
    tb.add_argument("dir", help="the directory to write into (`tensorboard --logdir DIR` shows it)")
    tb.add_argument("--follow", "-f", action="store_true", help="keep writing new points until the job ends")
    tb.add_argument(
        "--chain", action="store_true", help="first the points of the jobs it was resized from, oldest first"
    )


def listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise usage(
            f"gpudeck export prometheus: --listen {text!r}: expected ADDRESS:PORT, e.g. 127.0.0.1:9400"
        )
    return host.strip("[]"), int(port)


def run(args: argparse.Namespace, session: Session) -> int:
    if args.export_verb == "prometheus":
        return prometheus(args, session)
    if args.export_verb == "tensorboard":
        return tensorboard(args, session)
    raise usage("gpudeck export: name a format: prometheus or tensorboard")


def tensorboard(args: argparse.Namespace, session: Session) -> int:
    from pathlib import Path

    from ..actions.find import list_jobs, resolve
    from ..export.journal_read import journal_batches
    from ..export.tensorboard import EventSink, writer_for
    from .metrics import ancestors

    directory = Path(args.dir).expanduser()
    if directory.exists() and not directory.is_dir():
        raise usage(f"gpudeck export tensorboard: {args.dir}: not a directory")
    if args.follow:
        session.on_status = print_status  # a follower reconnects: say so, and why
    job = resolve(session, args.job)
    chain = [*ancestors(list_jobs(session), job), job] if args.chain else [job]
    sink = EventSink(writer_for(directory))
    try:
        for i, one in enumerate(chain):
            follow = args.follow and i == len(chain) - 1
            for node, records in journal_batches(session, one, follow, idle=sink.flush):
                sink.write(node, records)
    finally:
        sink.close()
    print(f"wrote {sink.points} points of {job.id} to {directory}")
    return 0


def prometheus(args: argparse.Namespace, session: Session) -> int:
    from remote_agent.exporter.exposition import render
    from remote_agent.exporter.server import metrics_server, start

    from ..export.gather import CachedSnapshot, gather

    if args.keep_ended < 0:
        raise usage("gpudeck export prometheus: --keep-ended: expected seconds >= 0")
    if args.once:
        sys.stdout.write(render(gather(session, args.keep_ended)))
        return 0
    host, port = listen_address(args.listen)
    cache = CachedSnapshot(session, args.keep_ended)
    try:
        server = metrics_server(host, port, lambda: cache.text(render))
    except OSError as exc:
        raise usage(f"gpudeck export prometheus: --listen {args.listen}: {exc.strerror or exc}") from None
    bound_port = server.server_address[1]
    print(f"serving http://{host}:{bound_port}/metrics (Ctrl-C to stop)", flush=True)
    start(server)
    try:
        threading.Event().wait()  # the server works on its thread; this one waits for Ctrl-C
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0
