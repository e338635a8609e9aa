"""`gpudeck metrics JOB [--json] [-f]`: the points parsed from a job's output, from its journal."""

from __future__ import annotations

import argparse
import json
import queue
import sys
import time

from remote_agent.storage.records import expand, expand_all

from ..actions import resolve
from ..errors import EXIT_NO_SUCH_JOB, GpudeckError
from ..fleet.states import ENDED
from ..format import metric_line, resized_text
from ..remote.client import decode_object
from ..session import Session, print_status
from .metrics_text import PLAIN_MARK, POINTS_MARK, points_block_json, points_json


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
        # As journal text: a million points are reshaped as strings, not decoded and re-encoded.
        targets[(job.id, node["node"])] = client.tail(job.id, node["node"], since_seq=0, text=True)
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
                job_id, node, last_seq, data = client.journals.get(timeout=0.2)
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
            seen[key] = last_seq
            if _print_text(data.decode("utf-8", "replace"), node, args.json):
                finished.add(key)
        if not got_any:
            time.sleep(0)


def _print_text(text: str, node: str, as_json: bool) -> bool:
    """Journal lines' points, printed; True when one of them is the node's end. Runs of plain metric
    lines are reshaped as text (metrics_text); any other line is decoded."""
    if as_json and text.count(PLAIN_MARK) == text.count("\n"):
        out = points_json(text, node)
        if out is not None:
            _write(out)
            return False
    # Split at "\n" only: str.splitlines would also cut at U+2028 and U+0085 inside a string.
    lines = text.split("\n")[:-1]
    if not as_json:  # every point is formatted anyway: decode the batch, print it at once
        records = expand_all(r for r in map(decode_object, lines) if r is not None)
        _print(records, node, as_json)
        return any(r.get("kind") == "state" and r.get("state") in ENDED for r in records)
    ended = False
    run: list[str] = []
    for line in lines:
        if PLAIN_MARK in line:
            run.append(line)
            continue
        _print_run(run, node)
        run = []
        if POINTS_MARK in line:  # a run of points in one line: reshaped as text when plain
            out = points_block_json(line, node)
            if out is not None:
                _write(out)
                continue
        record = decode_object(line)
        if record is None:
            continue  # a malformed line: readers skip it
        if record.get("kind") == "state" and record.get("state") in ENDED:
            ended = True
        _print(expand(record), node, True)
    _print_run(run, node)
    return ended


def _print_run(lines: list[str], node: str) -> None:
    """--json points of metric lines: reshaped as text when provably plain, else decoded."""
    if not lines:
        return
    out = points_json("\n".join(lines) + "\n", node)
    if out is not None:
        _write(out)
        return
    _print(expand_all(r for r in map(decode_object, lines) if r is not None), node, True)


def _write(text: str) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode())  # bytes: TextIOWrapper.write is slow on megabytes of text
    sys.stdout.buffer.flush()


def _print(records: list, node: str, as_json: bool) -> None:
    """A batch of records' points, written at once: a million points print in seconds, not minutes
    (one write and one JSON encoder call per run of points instead of one per point); a resize
    between points is printed where it happened."""
    points: list = []
    for record in records:
        if record.get("kind") == "metric":
            points.append(record)
        elif record.get("kind") == "event" and record.get("event") == "resized":
            _print_points(points, node, as_json)
            points = []
            _print_resized(record, node, as_json)
    _print_points(points, node, as_json)


def _print_points(points: list, node: str, as_json: bool) -> None:
    if not points:
        return
    if as_json:
        lines = _json_lines(points, node)
    else:
        lines = [
            f"{time.strftime('%H:%M:%S', time.localtime(r.get('t') or 0))}  {metric_line(r.get('values') or {})}"
            for r in points
        ]
    sys.stdout.write("\n".join(lines) + "\n")
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


def _json_lines(points: list, node: str) -> list[str]:
    """{"t": ..., "node": ..., "values": {...}} per point, exactly as json.dumps writes each one,
    from one encoder call: the array is cut where each object starts ({"t": ...); a cut inside a
    value would make one part too many, so the count is checked and one by one is the fallback."""
    objects = [{"t": r.get("t"), "node": node, "values": r.get("values") or {}} for r in points]
    parts = json.dumps(objects)[1:-1].split(', {"t": ')
    if len(parts) != len(objects):
        return [json.dumps(o) for o in objects]
    return parts[:1] + ['{"t": ' + p for p in parts[1:]]
