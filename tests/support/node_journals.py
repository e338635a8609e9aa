"""Reading a job's node journals straight from the agent dir (no gpudeck command runs, so nothing
adopts or ends a job as a side effect), and what they say a node spent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.jobs import TERMINAL


def records(agent_dir: Path, job_id: str, node: str = "0") -> list[dict[str, Any]]:
    path = agent_dir / "jobs" / job_id / node / "events.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line
    return out


def final(recs: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in reversed(recs) if r.get("kind") == "state" and r.get("state") in TERMINAL), None)


def first_state(recs: list[dict[str, Any]], state: str) -> dict[str, Any]:
    return next(r for r in recs if r.get("kind") == "state" and r.get("state") == state)


def events(recs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [r for r in recs if r.get("kind") == "event" and r.get("event") == name]


def spent(recs: list[dict[str, Any]]) -> float:
    """What the node cost by its journal: the spend its budget stop journaled, plus its rate over the
    seconds from that stop to its end."""
    [stop] = events(recs, "autostop")
    end = final(recs)
    assert end is not None
    data = stop["data"]
    return float(data["accrued"]) + data["price_per_hour"] * data["share"] / 3600.0 * (end["t"] - stop["t"])


def find_job(agent_dir: Path, name: str) -> str | None:
    for spec in (agent_dir / "jobs").glob("*/0/spec.json"):
        try:
            if json.loads(spec.read_text()).get("name") == name:
                return spec.parent.parent.name
        except ValueError:
            continue
    return None
