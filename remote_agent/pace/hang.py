"""The likely hang's node (issue 34): in a stalled multi-node job, the node that stopped first.

The node whose last step is lowest while others got further ("node 1 stopped at step 120; node 0
waits at 121"); when every node stopped at the same step, the one whose last step is oldest by its
own host's clock, if it is older than the others' by more than SETTLE seconds (closer than that,
nobody can tell, and nothing is named). Pure: the clock is each node's `now`."""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence, Tuple

from .straggler import NodePace

SETTLE = 5.0  # seconds: two nodes whose last steps are closer than this stopped together


class Hang(NamedTuple):
    node: str
    step: float
    why: str


def likely_hang(nodes: Sequence[NodePace]) -> Optional[Hang]:
    stepped = [n for n in nodes if n.steps]
    if len(stepped) < 2 or len(stepped) < len(nodes):
        return None
    last = {n.node: (float(n.steps[-1][1]), n.now - float(n.steps[-1][0])) for n in stepped}
    low = min(step for step, _ in last.values())
    behind = sorted(k for k, (step, _) in last.items() if step == low)
    ahead = sorted((k for k in last if k not in behind), key=_rank)
    if ahead and len(behind) == 1:
        node = behind[0]
        waits = sorted({last[k][0] for k in ahead})
        where = "at step " + "/".join(_step(s) for s in waits)
        return Hang(
            node,
            low,
            "node %s stopped at step %s; %s %s" % (node, _step(low), _who(ahead), where),
        )
    if ahead:
        return None  # several nodes behind: no one node to name
    oldest = max(last, key=lambda k: last[k][1])
    others = [age for k, (_, age) in last.items() if k != oldest]
    if last[oldest][1] - max(others) <= SETTLE:
        return None
    rest = sorted((k for k in last if k != oldest), key=_rank)
    return Hang(
        oldest,
        low,
        "node %s stopped first, at step %s (%.0f s before the others); %s at %s"
        % (oldest, _step(low), last[oldest][1] - max(others), _who(rest), _step(low)),
    )


def _who(nodes: List[str]) -> str:
    """`node 0 waits`, `nodes 0,2 wait`."""
    return "node %s waits" % nodes[0] if len(nodes) == 1 else "nodes %s wait" % ",".join(nodes)


def _rank(node: str) -> Tuple[int, int, str]:
    return (0, int(node), "") if node.isdigit() else (1, 0, node)


def _step(v: float) -> str:
    return "%d" % v if v == int(v) else "%g" % v
