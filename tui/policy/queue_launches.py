"""What the controller's journal says of the instances it launched for the queue
(tui/policy/queue_capacity.py): their records, the ones still kept, and each launch's token."""

from __future__ import annotations

import hashlib
from typing import Any

from ..queue.entries import QueueEntry
from .journal import PolicyJournal


def queue_token(pool: str, head: str, done: int) -> str:
    """The client token of the instance launched for queued job `head`: the same on every retry and
    after a restart; `done` (launches for it already completed) makes a later, new launch a new one."""
    digest = hashlib.sha256("\0".join(("queue", pool, head, str(done))).encode()).hexdigest()
    return f"gpudeck-q-{digest[:24]}"


def launches_of(journal: PolicyJournal) -> list[dict[str, Any]]:
    """The queue's capacity records (`kind: queue` with a `pool_name`), oldest first."""
    return [r for r in journal.records() if r.get("kind") == "queue" and r.get("pool_name")]


def kept_of(journal: PolicyJournal, pool: str) -> dict[str, dict[str, Any]]:
    """host → the `launched` record of each instance launched for the queue into `pool`, not released."""
    kept: dict[str, dict[str, Any]] = {}
    for r in launches_of(journal):
        if r.get("pool_name") != pool or not isinstance(r.get("host"), str):
            continue
        if r.get("outcome") == "launched":
            kept[r["host"]] = r
        elif r.get("outcome") == "released":
            kept.pop(r["host"], None)
    return kept


def queue_record(t: float, outcome: str, e: QueueEntry, **extra: Any) -> dict[str, Any]:
    return {
        "t": round(t, 3),
        "kind": "queue",
        "outcome": outcome,
        "job": {"id": e.id, "name": e.name},
        "pool": list(e.opts.pool),
        "gpus": e.gpus,
        **extra,
    }
