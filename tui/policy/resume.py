"""A decision the controller journaled as `intent` and never closed (it was killed, or its machine
went down, between acting and journaling the outcome) is finished by the next controller before
its first pass: resumed to the decided size, else rolled back to the size it had, and journaled.

Idempotent by the decision's token, which is also the new job's id: a relaunch that got through
before the controller died is found by that id and only journaled, never launched twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..actions.find import Job
from ..errors import GpudeckError
from .journal import PolicyJournal

CLOSING = ("applied", "failed", "rolled_back", "abandoned")

Relaunch = Callable[[Job, int, tuple[str, ...], str], str]  # (old job, count, onto, new id) → new id


def open_intents(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `intent` records no later record of the same decision closed, oldest first."""
    closed = {r.get("intent_id") for r in records if r.get("outcome") in CLOSING}
    return [
        r
        for r in records
        if r.get("outcome") == "intent"
        and isinstance(r.get("intent_id"), str)
        and r["intent_id"] not in closed
    ]


def resume_interrupted(
    journal: PolicyJournal, jobs: list[Job], relaunch: Relaunch, now: float
) -> list[dict[str, Any]]:
    """Close every open intent; the records written."""
    by_id = {j.id: j for j in jobs}
    written = []
    for intent in open_intents(journal.records()):
        token = intent["intent_id"]
        old = by_id.get(str((intent.get("job") or {}).get("id")))
        onto = tuple(str(h) for h in intent.get("onto") or ())
        if token in by_id:  # the relaunch got through; only its outcome was never journaled
            written.append(journal.follow_up(intent, now, "applied", new_job=token, resumed=True))
        elif old is None:
            written.append(journal.follow_up(intent, now, "failed", error="the job is gone", resumed=True))
        elif not old.ended:  # killed before it stopped anything: the next pass decides afresh
            written.append(
                journal.follow_up(intent, now, "abandoned", why="the job was not touched", resumed=True)
            )
        else:
            written.append(_relaunch(journal, intent, old, onto, relaunch, now))
    return written


def _relaunch(
    journal: PolicyJournal,
    intent: dict[str, Any],
    old: Job,
    onto: tuple[str, ...],
    relaunch: Relaunch,
    now: float,
) -> dict[str, Any]:
    """The old job was stopped by the decision and nothing replaced it: relaunch at the decided
    size; when that fails, at the size it had (from the same checkpoint)."""
    token = intent["intent_id"]
    try:
        new_id = relaunch(old, int(intent["to"]), onto, token)
        return journal.follow_up(intent, now, "applied", new_job=new_id, resumed=True)
    except (GpudeckError, TypeError, ValueError) as exc:
        error = str(exc)
    try:
        new_id = relaunch(old, int(intent["from"]), (), token)
    except (GpudeckError, TypeError, ValueError) as exc:
        return journal.follow_up(intent, now, "failed", error=f"{error}; rolling back: {exc}", resumed=True)
    return journal.follow_up(intent, now, "rolled_back", new_job=new_id, error=error, resumed=True)
