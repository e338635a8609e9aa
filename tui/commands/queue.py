"""`gpudeck queue [--json]`: the jobs waiting for GPUs (`run --queue`), in the order they will start,
each with how many wait ahead of it in its pool and why it waits."""

from __future__ import annotations

import argparse
import json
import time

from ..format import table
from ..session import Session
from .ps import queued


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "queue",
        help="jobs waiting for GPUs (run --queue): order, position and why",
        description="The queue is started by `gpudeck policy run` (started for it when none runs): "
        "FIFO per pool within a priority. `gpudeck stop JOB` takes a job out of it.",
    )
    p.add_argument("--json", action="store_true", help="one JSON list of the waiting jobs")


def run(args: argparse.Namespace, session: Session) -> int:
    waiting = queued()
    if args.json:
        print(json.dumps(waiting, indent=2))
        return 0
    now = time.time()
    rows = [
        [
            q["id"],
            q["name"],
            ",".join(q["pool"]),
            str(q["priority"]),
            f"{now - q['submitted_at']:.0f}s",
            q["why"],
        ]
        for q in waiting
    ]
    print(table(["ID", "NAME", "POOL", "PRIORITY", "WAITING", "WHY"], rows))
    return 0
