"""A node's settled cost figures, folded from its journal as `jobs` reads it (jobstate.JobView).

What the client's cost counters need of an ended node, so that it never replays a journal from seq 1
for them (issue 36): when it ran (`start`: the command's start, else the supervisor's; `end`), how
it ended, the GPUs its `gpu` records named, its GPU samples reduced to the points where the
busiest GPU crosses the spec's idle threshold (the same idle time as every sample gives: a sample
holds until the next one), and its cost events. Plain dicts: it lives in JobView's cached fields.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

MAX_GPUS = 64
MAX_TURNS = (
    4000  # idle/busy changes kept; past that the summary says `partial` (the client reads the journal)
)
MAX_EVENTS = 100
DEFAULT_IDLE_PCT = 10.0
COST_EVENTS = frozenset(
    ["budget_warning", "autostop", "autostop_paused", "autostop_resumed", "stop_requested"]
)
TERMINAL = frozenset(["exited", "failed", "stopped", "killed"])


def empty() -> Dict[str, Any]:
    return {
        "start": None,
        "end": None,
        "state": None,
        "reason": None,
        "last_t": None,
        "gpus": [],
        "samples": [],
        "events": [],
        "partial": False,
        "_class": None,  # the last sample's class (idle, busy, n/a): a sample of the same class adds nothing
    }


def idle_pct(spec: Optional[Dict[str, Any]]) -> float:
    rule = (spec or {}).get("idle_stop")
    pct = rule.get("below_pct") if isinstance(rule, dict) else None
    return float(pct) if isinstance(pct, (int, float)) and not isinstance(pct, bool) else DEFAULT_IDLE_PCT


def fold(summary: Dict[str, Any], record: Dict[str, Any], threshold: float) -> None:
    """One journal record into the summary (records in seq order; any shape survives)."""
    t = record.get("t")
    if type(t) is not float and (type(t) is not int):  # (bools are not int here: type, not isinstance)
        return
    summary["last_t"] = t
    kind = record.get("kind")
    if kind == "metric":
        return  # most records: only their time counts here
    if kind == "state":
        state = record.get("state")
        if not isinstance(state, str):
            return  # a malformed record (jobstate counts it): a list is not even hashable
        if state == "starting" and summary["start"] is None:
            summary["start"] = t
        elif state == "running":
            summary["start"] = t  # billed from the command's start, not the supervisor's
        elif state in TERMINAL:
            if summary["start"] is None:
                summary["start"] = t
            summary["end"] = t
            reason = record.get("reason")
            summary["reason"] = reason if isinstance(reason, str) else None
        summary["state"] = state
    elif kind == "gpu":
        _gpu(summary, record.get("gpus"), t, threshold)
    elif kind == "event" and isinstance(record.get("event"), str) and record["event"] in COST_EVENTS:
        data = record.get("data")
        summary["events"] = (summary["events"] + [{"t": t, "event": record["event"], "data": data or {}}])[
            -MAX_EVENTS:
        ]


def _gpu(summary: Dict[str, Any], gpus: Any, t: float, threshold: float) -> None:
    rows = [g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else []
    for g in rows:
        uuid = g.get("uuid")
        if uuid and str(uuid) not in summary["gpus"] and len(summary["gpus"]) < MAX_GPUS:
            summary["gpus"].append(str(uuid))
    utils = [float(g["util"]) for g in rows if isinstance(g.get("util"), (int, float))]
    util = max(utils) if utils else None
    cls = "na" if util is None else ("idle" if util < threshold else "busy")
    if cls == summary["_class"] or summary["partial"]:
        return
    if len(summary["samples"]) >= MAX_TURNS:
        summary["partial"] = True
        return
    summary["_class"] = cls
    summary["samples"].append([t, util])


def settled(summary: Dict[str, Any]) -> Dict[str, Any]:
    """The summary as the job object carries it (an ended node's)."""
    return {k: v for k, v in summary.items() if not k.startswith("_")}
