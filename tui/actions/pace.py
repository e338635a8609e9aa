"""A running multi-node job's pace as `ps`, `inspect` and `--json` show it (issue 34): each node's
step rate and GPU utilisation, the straggler (remote_agent/pace/straggler.py) and, while the job is
stalled, the likely hang's node (remote_agent/pace/hang.py). Judged here, by the client, from the
recent points every node's agent keeps: no single host sees every node of the job."""

from __future__ import annotations

from typing import Any

from remote_agent.pace.hang import Hang, likely_hang
from remote_agent.pace.straggler import NodePace, Straggler, judge, latest, settings

from ..errors import GpudeckError
from .agents import Agents


def paces(nodes: list[dict[str, Any]]) -> list[NodePace]:
    """The running nodes' paces (a node without one: ended, or an agent from before issue 34)."""
    found = (NodePace.read(n.get("node"), n.get("pace")) for n in nodes if n.get("state") == "running")
    return [p for p in found if p is not None]


def node_rates(nodes: list[dict[str, Any]]) -> dict[str, tuple[float | None, float | None]]:
    """node -> (steps/s, mean GPU %) over the newest window; absent for a node without a pace."""
    return latest(paces(nodes), settings())


def stragglers(nodes: list[dict[str, Any]], active: bool) -> list[Straggler]:
    if not active or len(nodes) < 2:
        return []
    running = paces(nodes)
    return judge(running, settings()) if len(running) == len(nodes) else []


def hang(nodes: list[dict[str, Any]], stalled: bool) -> Hang | None:
    return likely_hang(paces(nodes)) if stalled and len(nodes) >= 2 else None


def straggler_json(found: list[Straggler]) -> dict[str, Any] | None:
    """`straggler` in a job object: null, or the slowest node's judgement and every node named."""
    if not found:
        return None
    first = found[0]
    return {
        "nodes": [g.node for g in found],
        "measure": first.measure,
        "value": round(first.value, 4),
        "others": round(first.others, 4),
        "for_s": first.lagging_s,
        "why": "; ".join(g.why for g in found),
    }


def hang_json(found: Hang | None) -> dict[str, Any] | None:
    return None if found is None else {"node": found.node, "step": found.step, "why": found.why}


def notes(nodes: list[dict[str, Any]], found: list[Straggler], hung: Hang | None) -> list[dict[str, Any]]:
    """The `pace_note` requests that bring each running node's journal in line with the judgement:
    only for nodes whose journaled `straggler` / `likely_hang` differ from what is judged now."""
    slow = {g.node: g.why for g in found}
    out = []
    for n in nodes:
        if n.get("state") != "running":
            continue
        node = str(n.get("node"))
        straggler = slow.get(node)
        hang_why = hung.why if hung is not None and hung.node == node else None
        journaled = (n.get("straggler"), n.get("likely_hang"))
        if bool(straggler) != bool(journaled[0]) or (hang_why and hang_why != journaled[1]):
            out.append(
                {"host": n["host"], "job": n["id"], "node": node, "straggler": straggler, "hang": hang_why}
            )
    return out


def journal_judgement(
    agents: Agents, nodes: list[dict[str, Any]], found: list[Straggler], hung: Hang | None
) -> None:
    """Tell the named nodes' agents (their supervisors journal `straggler`, `unstraggler`,
    `likely_hang`: supervision/pace_note.py). Best effort: an agent from before issue 34, or a host
    that went away, leaves the journal as it was, and the next look tries again."""
    for note in notes(nodes, found, hung):
        host = note.pop("host")
        try:
            agents.request(host, "pace_note", timeout=10.0, **note)
        except GpudeckError:
            pass
