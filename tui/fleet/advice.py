"""A job's advice across its nodes (remote_agent/advice/): one finding per kind, the node that said
it first (by its journal's time) named; a GPU's health stays per node and GPU. Used by the CLI's
job object (actions/find.py) and the TUI's job view (fleet/jobs.py)."""

from __future__ import annotations

from typing import Any

from remote_agent.jobstate import advice_data

MAX_PER_NODE = 10  # as the agent keeps (jobstate.MAX_ADVICE)


def merged_advice(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`nodes`: each with `node`, `host` and `advice` (its list); the merged list, oldest first."""
    said: dict[str, dict[str, Any]] = {}
    for n in nodes:
        for a in n.get("advice") or []:
            if not isinstance(a, dict) or not isinstance(a.get("kind"), str):
                continue
            key = a["kind"] if a["kind"] != "gpu_health" else f"gpu_health {n.get('host')} {a.get('why')}"
            node = str(n.get("node", "0"))
            seen = said.get(key)
            if seen is None:
                said[key] = dict(a, node=node, nodes=[node], host=n.get("host"))
                continue
            seen["nodes"].append(node)
            if _when(a) < _when(seen):
                said[key] = dict(a, node=node, nodes=seen["nodes"], host=n.get("host"))
    return sorted(said.values(), key=_when)


def _when(advice: dict[str, Any]) -> float:
    t = advice.get("t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else float("inf")


def advice_of(data: Any, t: Any) -> dict[str, Any] | None:
    """An `advice` journal event's data as a node keeps it (the agent's own reading of it)."""
    return advice_data(data, t)
