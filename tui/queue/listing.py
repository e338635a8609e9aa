"""The queue as `ps`, `gpudeck queue` and the TUI's jobs tab list it: the waiting jobs in the order
they will start (with how many wait ahead in their pool and why), then those being started."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import paths

if TYPE_CHECKING:
    from .entries import QueueEntry


def waiting_jobs(say: Callable[[str], None]) -> list[dict[str, Any]]:
    """The jobs waiting in the queue for GPUs (`run --queue`), first to start first, then those the
    controller is starting now (claimed, not yet launched: without them a job would vanish from `ps`
    for the moment of its launch)."""
    if not paths.queue_dir().is_dir():  # no job was ever queued here: nothing more to load
        return []
    from .entries import STARTING, Queue
    from .start import positions

    queue = Queue()
    entries = queue.entries()
    starting = queue.entries(STARTING)
    for line in queue.problems:
        say(line)
    where = positions(entries)
    from .notes import read_notes

    notes = read_notes()  # the controller's word on capacity for a pool (queue_capacity.py)

    def why(e: QueueEntry) -> str:
        note = notes.get(",".join(e.opts.pool))
        return f"{where[e.id][1]}; {note}" if note else where[e.id][1]

    return [_row(e, "queued", where[e.id][0], why(e)) for e in entries] + [
        _row(e, "starting", 0, "its GPUs are free: the controller is launching it") for e in starting
    ]


def _row(e: QueueEntry, state: str, ahead: int, why: str) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "state": state,
        "pool": list(e.opts.pool),
        "gpus": e.gpus,
        "nodes": e.opts.nodes,
        "priority": e.priority,
        "submitted_at": e.submitted_at,
        "ahead": ahead,
        "why": why,
    }
