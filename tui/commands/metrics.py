"""`gpudeck metrics JOB [--json] [-f] [--chain]`: the points parsed from a job's output, from its
journal; with --chain, a restart-mode resize chain's (the jobs it was resized from, oldest first)."""

from __future__ import annotations

import argparse
import json
import queue
import sys
import time
from typing import Any

from remote_agent.storage.records import expand, expand_all

from ..actions.find import Job, list_jobs, resolve
from ..errors import EXIT_NO_SUCH_JOB, GpudeckError
from ..fleet.states import ENDED
from ..format import metric_line, resized_text
from ..remote.client import AgentError, decode_object
from ..session import Session, print_status
from .metrics_text import PLAIN_MARK, POINTS_MARK, points_block_json, points_json


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("metrics", help="print a job's metric points (loss, step, lr…)")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("--json", action="store_true", help="one JSON object per point")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new points until the job ends")
    p.add_argument(
        "--chain",
        action="store_true",
        help="first the points of the jobs it went on from (resizes, restarts, managed recoveries), oldest first, "
        "each point with its job id (--json) or each job under a header line",
    )


def _previous(job: Job) -> str | None:
    """The job this one went on from: a resize's (resized_from), else a restart's or a managed
    job's recovery (restart_of)."""
    link = job.first.get("resized_from")
    if isinstance(link, dict) and isinstance(link.get("job"), str):
        return str(link["job"])
    before = job.first.get("restart_of")
    return before if isinstance(before, str) else None


def ancestors(jobs: list[Job], job: Job) -> list[Job]:
    """The jobs `job` went on from (resizes, restarts, recoveries), oldest first; the chain stops at
    one no host lists (rm'd, or on a host that is gone)."""
    by_id, out, seen = {j.id: j for j in jobs}, [], {job.id}
    prev_id = _previous(job)
    while prev_id in by_id and prev_id not in seen:
        prev = by_id[prev_id]
        seen.add(prev.id)
        out.append(prev)
        prev_id = _previous(prev)
    return out[::-1]


def run(args: argparse.Namespace, session: Session) -> int:
    if args.follow:
        session.on_status = print_status  # a follower reconnects: say so, and why
    job = resolve(session, args.job)
    chain = [*ancestors(list_jobs(session), job), job] if args.chain else [job]
    for i, one in enumerate(chain):
        if args.chain and not args.json:
            print(f"-- job {one.id} ({len(one.nodes)} node{'s' * (len(one.nodes) != 1)}) --")
        code = _points_of(
            session, one, args.json, args.follow and i == len(chain) - 1, one.id if args.chain else None
        )
        if code:
            return code
    return 0


def _points_of(session: Session, job: Job, as_json: bool, follow: bool, tag: str | None) -> int:
    """One job's points; `tag`: its id, written into each --json point (a chain's)."""
    ended = job.ended
    targets: dict[tuple[str, str], int] = {}
    for n in job.nodes:
        client = session.client(n["host"])
        # As journal text: a million points are reshaped as strings, not decoded and re-encoded.
        try:
            targets[(job.id, n["node"])] = client.tail(job.id, n["node"], since_seq=0, text=True)
        except AgentError as exc:  # e.g. its directory was deleted: one line, not a traceback
            raise GpudeckError(f"{n['host']}: {exc}", EXIT_NO_SUCH_JOB) from None
    clients = {session.client(n["host"]) for n in job.nodes}
    seen: dict[tuple[str, str], int] = dict.fromkeys(targets, 0)
    finished: set[tuple[str, str]] = set()
    while True:
        caught_up = all(seen[k] >= targets[k] for k in targets)
        if caught_up and (not follow or ended or finished == set(targets)):
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
                    raise GpudeckError(
                        f"{client.host}: stopped following job {job_id}: {why}", EXIT_NO_SUCH_JOB
                    ) from None
                continue
            got_any = True
            key = (job_id, node)
            seen[key] = last_seq
            if _print_text(data.decode("utf-8", "replace"), node, as_json, tag, len(targets) > 1):
                finished.add(key)
        if not got_any:
            time.sleep(0)


def _print_text(text: str, node: str, as_json: bool, tag: str | None = None, label: bool = False) -> bool:
    """Journal lines' points, printed; True when one of them is the node's end. Runs of plain metric
    lines are reshaped as text (metrics_text); any other line is decoded (always, with a job `tag`)."""
    if tag is not None and as_json:
        records = expand_all(r for r in map(decode_object, text.split("\n")[:-1]) if r is not None)
        _print(records, node, True, tag)
        return any(r.get("kind") == "state" and r.get("state") in ENDED for r in records)
    if as_json and text.count(PLAIN_MARK) == text.count("\n"):
        out = points_json(text, node)
        if out is not None:
            _write(out)
            return False
    # Split at "\n" only: str.splitlines would also cut at U+2028 and U+0085 inside a string.
    lines = text.split("\n")[:-1]
    if not as_json:  # every point is formatted anyway: decode the batch, print it at once
        records = expand_all(r for r in map(decode_object, lines) if r is not None)
        _print(records, node, as_json, label=label)  # a multi-node job's text names each point's node
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


def _print(
    records: list[dict[str, Any]], node: str, as_json: bool, tag: str | None = None, label: bool = False
) -> None:
    """A batch of records' points, written at once: a million points print in seconds, not minutes
    (one write and one JSON encoder call per run of points instead of one per point); a resize
    between points is printed where it happened."""
    points: list[dict[str, Any]] = []
    for record in records:
        if record.get("kind") == "metric":
            points.append(record)
        elif record.get("kind") == "event" and record.get("event") == "resized":
            _print_points(points, node, as_json, tag, label)
            points = []
            _print_resized(record, node, as_json, tag)
    _print_points(points, node, as_json, tag, label)


def _print_points(
    points: list[dict[str, Any]], node: str, as_json: bool, tag: str | None = None, label: bool = False
) -> None:
    if not points:
        return
    if as_json:
        lines = _json_lines(points, node, tag)
    else:
        where = f"node {node}  " if label else ""
        lines = [
            f"{time.strftime('%H:%M:%S', time.localtime(r.get('t') or 0))}  {where}{metric_line(r.get('values') or {})}"
            for r in points
        ]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def _print_resized(record: dict[str, Any], node: str, as_json: bool, tag: str | None = None) -> None:
    """A resize between two points: from → to nodes, why, how long training paused."""
    given = record.get("data")
    data = given if isinstance(given, dict) else {}
    if as_json:
        print(
            json.dumps(
                {
                    "t": record.get("t"),
                    **({"job": tag} if tag else {}),
                    "node": node,
                    "event": "resized",
                    "resized": data,
                }
            )
        )
    else:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.get("t") or 0))
        print(f"{stamp}  -- {resized_text(data)} --")
    sys.stdout.flush()


def _json_lines(points: list[dict[str, Any]], node: str, tag: str | None = None) -> list[str]:
    """{"t": ..., "node": ..., "values": {...}} per point, exactly as json.dumps writes each one,
    from one encoder call: the array is cut where each object starts ({"t": ...); a cut inside a
    value would make one part too many, so the count is checked and one by one is the fallback."""
    job = {"job": tag} if tag else {}
    objects = [{"t": r.get("t"), **job, "node": node, "values": r.get("values") or {}} for r in points]
    parts = json.dumps(objects)[1:-1].split(', {"t": ')
    if len(parts) != len(objects):
        return [json.dumps(o) for o in objects]
    return parts[:1] + ['{"t": ' + p for p in parts[1:]]
