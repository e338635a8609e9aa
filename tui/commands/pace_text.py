"""How `ps` and `inspect` word a multi-node job's pace (issue 34): the straggler beside the state,
the likely hang beside a stall, and inspect's per-node table of step rate and GPU utilisation."""

from __future__ import annotations

from ..actions import pace
from ..actions.agents import Agents
from ..actions.find import Job
from ..format import number, step_rate, table


def state_note(job: Job) -> str | None:
    """`straggler: node 1` while a node lags the others (None otherwise)."""
    found = job.stragglers
    if not found:
        return None
    names = ",".join(g.node for g in found)
    return f"straggler: node{'s' if len(found) > 1 else ''} {names}"


def why_note(job: Job) -> str | None:
    """What `ps` says in WHY for a live job: the stall (and its likely node), else the straggler."""
    if job.stalled and not job.ended:
        hang = job.likely_hang
        return f"{job.stalled}; likely hang: {hang.why}" if hang else job.stalled
    found = job.stragglers
    return "; ".join(g.why for g in found) if found else None


def nodes_table(job: Job) -> list[str]:
    """inspect's pace table of a running multi-node job: each node's step, rate and GPU use, the
    straggler marked (the window: remote_agent/pace/straggler.py, GPUDECK_STRAGGLER_WINDOW)."""
    if len(job.nodes) < 2 or job.ended:
        return []
    rates = pace.node_rates(job.nodes)
    if not rates:
        return []
    slow = {g.node for g in job.stragglers}
    hang = job.likely_hang
    rows = []
    for n in job.nodes:
        node = str(n["node"])
        rate, util = rates.get(node, (None, None))
        mark = "straggler" if node in slow else "likely hang" if hang and hang.node == node else ""
        rows.append(
            [
                node,
                str(n["host"]),
                number((n.get("last") or {}).get("step")),
                step_rate(rate),
                "—" if util is None else f"{util:.0f}%",
                mark,
            ]
        )
    body = table(["NODE", "HOST", "STEP", "RATE", "GPU", ""], rows)
    return ["  pace (steps/s and GPU over the last window):"] + [f"    {line}" for line in body.splitlines()]


def journal(agents: Agents, jobs: list[Job]) -> None:
    """Each live multi-node job's judgement into its nodes' journals, where it changed (the hosts'
    supervisors write it: tui/actions/pace.journal_judgement)."""
    for job in jobs:
        if len(job.nodes) >= 2 and not job.ended:
            pace.journal_judgement(agents, job.nodes, job.stragglers, job.likely_hang)
