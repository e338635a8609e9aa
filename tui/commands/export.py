"""`gpudeck export prometheus|tensorboard`: what gpudeck knows, in the formats other tools read."""

from __future__ import annotations

import argparse
import sys
import threading

from ..actions.options import usage
from ..session import Session


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
    raise usage("gpudeck export: name a format: prometheus")


def prometheus(args: argparse.Namespace, session: Session) -> int:
    from ..export.exposition import render
    from ..export.gather import CachedSnapshot, gather
    from ..export.server import metrics_server, start

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
