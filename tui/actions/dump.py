"""Stacks of a hung job (issue 34): each node's agent takes a dump (`dump` op: every Python process of
the job's tree, py-spy or the faulthandler route) or answers the latest saved one (`show`). One core
for the CLI's `gpudeck dump` and the job view's dump screen. Blocks (call from a worker)."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..errors import GpudeckError
from .agents import Agents

# py-spy may take seconds per process and a node holds a few dozen: the agent's answer may take long
TAKE_TIMEOUT = 180.0
SHOW_TIMEOUT = 30.0
MAX_TEXT = 16 << 20  # characters of one node's dump kept, whatever an agent sends


@dataclass(frozen=True)
class NodeDump:
    host: str
    node: str
    text: str  # the dump as saved on the host ("" when it failed)
    path: str | None = None  # where the host saved it
    t: float | None = None  # when it was taken (the host's clock)
    stacks: int | None = None  # processes whose stack it holds (None: a shown dump does not say)
    unreached: int | None = None  # Python processes neither route reached, and other processes
    ranks: tuple[int, ...] = ()  # the ranks whose stacks it holds
    error: str | None = None  # why this node has no dump

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "node": self.node,
            "path": self.path,
            "t": self.t,
            "stacks": self.stacks,
            "unreached": self.unreached,
            "ranks": list(self.ranks),
            "text": self.text if self.error is None else None,
            "error": self.error,
        }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def node_dump(host: str, node: str, answer: Any) -> NodeDump:
    """Total over any answer's shape: what is malformed is left out, never raised."""
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        return NodeDump(host, node, "", error="the agent's answer holds no dump")
    listed = answer.get("stacks")
    stacks = [s for s in listed if isinstance(s, dict)] if isinstance(listed, list) else None
    counts = answer["counts"] if isinstance(answer.get("counts"), dict) else {}
    t = answer.get("t")
    return NodeDump(
        host,
        node,
        answer["text"][:MAX_TEXT],
        path=str(answer["path"])[:4096] if isinstance(answer.get("path"), str) else None,
        t=float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None,
        stacks=_int(counts.get("stacks")),
        unreached=_int(counts.get("unreached")),
        ranks=tuple(sorted({r for s in stacks or () if (r := _int(s.get("rank"))) is not None})),
    )


def dump_nodes(
    agents: Agents, nodes: Iterable[tuple[str, str]], job_id: str, show: bool = False
) -> list[NodeDump]:
    """Every (host, node) asked at once, answers in the nodes' order; a node that fails says why."""
    nodes = list(nodes)

    def ask(target: tuple[str, str]) -> NodeDump:
        host, node = target
        timeout = SHOW_TIMEOUT if show else TAKE_TIMEOUT
        try:
            answer = agents.request(host, "dump", timeout=timeout, job=job_id, node=node, show=show)
        except GpudeckError as exc:
            return NodeDump(host, node, "", error=str(exc))
        return node_dump(host, node, answer)

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(nodes)))) as pool:
        return list(pool.map(ask, nodes))
