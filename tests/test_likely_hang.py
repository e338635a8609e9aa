"""Issue 34: in a stalled multi-node job, the node that stopped first is named (pace/hang.py)."""

from __future__ import annotations

from remote_agent.pace.hang import likely_hang
from remote_agent.pace.straggler import NodePace


def stopped(node: str, step: float, ago: float, now: float = 1000.0) -> NodePace:
    return NodePace(node, now, [[now - ago - 10, step - 1], [now - ago, step]])


def test_the_node_behind_is_named_while_the_others_wait() -> None:
    found = likely_hang([stopped("0", 121, 600), stopped("1", 120, 600), stopped("2", 121, 600)])
    assert found is not None and found.node == "1" and found.step == 120
    assert found.why == "node 1 stopped at step 120; nodes 0,2 wait at step 121"


def test_at_one_step_the_node_that_stopped_first_is_named() -> None:
    found = likely_hang([stopped("0", 120, 600), stopped("1", 120, 840, now=5000.0)])
    assert found is not None and found.node == "1"
    assert found.why.startswith("node 1 stopped first, at step 120 (240 s before the others)")


def test_nodes_that_stopped_together_or_lack_steps_name_no_one() -> None:
    assert likely_hang([stopped("0", 120, 600), stopped("1", 120, 602)]) is None
    assert likely_hang([stopped("0", 120, 600), NodePace("1", 1000.0)]) is None
    assert likely_hang([stopped("0", 120, 600)]) is None
    assert likely_hang([stopped("0", 121, 600), stopped("1", 120, 600), stopped("2", 120, 600)]) is None
