"""`gpudeck dump JOB [--node K|all] [--show] [--json]`: the stacks of every Python process of a job
(issue 34), taken on each node by its agent (py-spy, or the faulthandler route), saved in the job's
directory there and printed; --show prints the latest saved dump without taking one."""

from __future__ import annotations

import argparse
import sys

from ..actions.dump import NodeDump, dump_nodes
from ..actions.find import resolve
from ..errors import EXIT_ERROR, EXIT_USAGE, GpudeckError
from ..printable import printable
from ..session import Session
from .answer import say

FIELDS = "id, nodes: [{host, node, path, t, stacks, unreached, ranks, text, error}]"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("dump", help="the stacks of a job's Python processes on every node (a hung job)")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("--node", default="all", metavar="K", help="one node of the job (default all)")
    p.add_argument(
        "--show",
        action="store_true",
        help="print the latest saved dump instead of taking one (the one form --read-only allows)",
    )
    p.add_argument("--json", action="store_true", help=f"answer with one JSON object: {FIELDS}")


def run(args: argparse.Namespace, session: Session) -> int:
    if getattr(args, "read_only", False) and not args.show:  # a dump signals the job's processes
        raise GpudeckError("dump: refused: --read-only (--show reads the saved dump)", EXIT_USAGE)
    job = resolve(session, args.job)
    nodes = [(str(n.get("host")), str(n.get("node"))) for n in job.nodes]
    if args.node != "all":
        nodes = [(h, n) for h, n in nodes if n == args.node]
        if not nodes:
            have = ", ".join(str(n.get("node")) for n in job.nodes)
            raise GpudeckError(
                f"gpudeck dump: job {job.id} has no node {args.node!r} (nodes: {have})", EXIT_USAGE
            )
    dumps = dump_nodes(session, nodes, job.id, show=args.show)
    if args.json:
        say(True, {"id": job.id, "nodes": [d.to_json() for d in dumps]}, "")
    else:
        for d in dumps:
            if d.error is None:
                sys.stdout.write(_text(d))
                print(printable(f"(saved on {d.host}: {d.path})") if d.path else "", end="\n\n")
    for d in dumps:
        if d.error is not None:
            print(printable(f"gpudeck: dump: {d.error}"), file=sys.stderr)  # it names the host and node
    return EXIT_ERROR if any(d.error is not None for d in dumps) else 0


def _text(d: NodeDump) -> str:
    """The dump line by line, each printable: a command line or a stack may hold an ESC."""
    return "".join(printable(line) + "\n" for line in d.text.rstrip("\n").split("\n"))
