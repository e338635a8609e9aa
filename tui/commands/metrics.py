"""`gpudeck metrics JOB [--json] [-f]`: the points parsed from a job's output, from its journal."""

from __future__ import annotations

import argparse
import json
import queue
import sys
import time

from ..actions import resolve
from ..errors import EXIT_NO_SUCH_JOB, GpudeckError
from ..fleet.states import ENDED
from ..format import metric_line, resized_text
from ..session import Session, print_status


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metrics", help="print a job's metric points (loss, step, lr…)")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("--json", action="store_true", help="one JSON object per point")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new points until the job ends")


def run(args: argparse.Namespace, session: Session) -> int:
    if args.follow:
        session.on_status = print_status  # a follower reconnects: say so, and why
    job = resolve(session, args.job)
    ended = job.ended
    targets: dict[tuple[str, str], int] = {}
    for node in job.nodes:
        client = session.client(node["host"])
        targets[(job.id, node["node"])] = client.tail(job.id, node["node"], since_seq=0)
    clients = {session.client(n["host"]) for n in job.nodes}
    seen: dict[tuple[str, str], int] = dict.fromkeys(targets, 0)
    finished: set[tuple[str, str]] = set()
    while True:
        caught_up = all(seen[k] >= targets[k] for k in targets)
        if caught_up and (not args.follow or ended or finished == set(targets)):
            return 0
        got_any = False
        for client in clients:
            try:
                job_id, node, records = client.events.get(timeout=0.2)
            except queue.Empty:
                if not client.connected:
                    return 1
                gone = [(key, why) for key, why in client.dropped.items() if key in targets]
                if gone:
                    (job_id, node), why = gone[0]
                    raise GpudeckError(f"{client.host}: stopped following job {job_id}: {why}", EXIT_NO_SUCH_JOB) from None
                continue
            got_any = True
            key = (job_id, node)
            for record in records:
                seen[key] = record["seq"]
                _print(record, node, args.json)
                if record.get("kind") == "state" and record.get("state") in ENDED:
                    finished.add(key)
        if not got_any:
            time.sleep(0)


def _print(record: dict, node: str, as_json: bool) -> None:
    if record.get("kind") == "event" and record.get("event") == "resized":
        _print_resized(record, node, as_json)
        return
    if record.get("kind") != "metric":
        return
    values = record.get("values") or {}
    if as_json:
        print(json.dumps({"t": record.get("t"), "node": node, "values": values}))
    else:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.get("t") or 0))
        print(f"{stamp}  {metric_line(values)}")
    sys.stdout.flush()


def _print_resized(record: dict, node: str, as_json: bool) -> None:
    """A resize between two points: from → to nodes, why, how long training paused."""
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    if as_json:
        print(json.dumps({"t": record.get("t"), "node": node, "event": "resized", "resized": data}))
    else:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.get("t") or 0))
        print(f"{stamp}  -- {resized_text(data)} --")
    sys.stdout.flush()
