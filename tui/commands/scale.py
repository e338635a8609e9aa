"""`gpudeck scale JOB +1|-1|N`: resize a multi-node job in restart mode; prints the new job's id."""

from __future__ import annotations

import argparse

from ..actions import find, options, scale
from ..errors import EXIT_USAGE, GpudeckError
from ..printable import warn
from ..session import Session
from .answer import add_json, say


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "scale",
        help="resize a job: stop (checkpoint), relaunch on the new node count, resume",
        description="Stop every node gracefully (the job checkpoints on SIGTERM), then launch the "
        "same command on the new node count as a new job (restart_of: the old one) "
        "that resumes from the checkpoint. Prints the new job's id.",
    )
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("count", metavar="+N|-N|N", help="nodes to add (+1), remove (-1), or the new count")
    p.add_argument(
        "--host",
        metavar="H1,H2,...",
        help="where the new nodes go, one host each (default: the job's "
        "pool, free GPUs first; else its --host list round-robin)",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V|K",
        help="a variable's value for nodes on hosts the job is not on yet (its own values stay on its hosts)",
    )
    p.add_argument(
        "--refresh-data",
        action="store_true",
        help="--data: the nodes take the prefixes' current objects (default: those the job was launched with)",
    )
    add_json(p, "id, name, previous, nodes_before, nodes, dropped, elastic")


def run(args: argparse.Namespace, session: Session) -> int:
    job = find.resolve(session, args.job)
    onto = tuple(h.strip() for h in args.host.split(",")) if args.host is not None else ()
    if any(not h for h in onto):
        raise GpudeckError("--host: an empty host name in the list", EXIT_USAGE)
    scaled = scale.scale(
        session,
        session.store,
        job,
        args.count,
        onto=onto,
        env=options.parse_env(args.env),
        refresh_data=args.refresh_data,
    )
    if not args.json:
        warn(str(scaled))  # what happened, for people; stdout stays the id
    say(
        args.json,
        {
            "id": scaled.id,
            "name": scaled.name,
            "previous": scaled.previous,
            "nodes_before": scaled.nodes_before,
            "nodes": scaled.nodes,
            "dropped": scaled.dropped or None,
            "elastic": scaled.elastic or None,
        },
        scaled.id,
    )
    return 0
