"""Issue 34 in the job view: the nodes panel of a running multi-node job shows each node's step
rate once two nodes have one, and marks the straggler with why (the judgement ps uses); equal nodes
are never marked; a node whose host clock runs ahead is read on its own clock."""

from __future__ import annotations

from tui.fleet import Fleet
from tui.widgets.job_nodes import render_nodes

JOB = "20261201-000100-cccccc"


def two_nodes(fleet: Fleet, every: dict[str, float], offset: float = 0.0) -> None:
    """Nodes 0 and 1 (node 1 on `b`, whose clock is `offset` s ahead), stepping every `every[node]` s
    from 360 s before 1000 (the client's now) by their hosts' clocks."""
    fleet.apply_jobs(
        "a",
        [
            {
                "id": JOB,
                "state": "running",
                "nodes": [
                    {"host": "a", "node": "0", "state": "running", "pid": 10},
                    {"host": "b", "node": "1", "state": "running", "pid": 11},
                ],
            }
        ],
    )
    fleet.hosts["b"].clock_offset = offset
    job = fleet.jobs[JOB]
    for node, gap in every.items():
        skew = offset if node == "1" else 0.0
        t, step = 640.0, 0
        while t <= 1000.0:
            job.apply_record(
                "ab"[int(node)], job.nodes[node], {"kind": "metric", "values": {"step": step}}, t + skew
            )
            t, step = t + gap, step + 1


def test_the_straggler_is_marked_with_its_rate() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    fleet.host("a")
    fleet.host("b")
    two_nodes(fleet, {"0": 0.5, "1": 2.0}, offset=3600.0)
    lines = render_nodes(fleet.jobs[JOB], fleet, 1000.0).plain.splitlines()
    assert lines[0].split() == ["node", "host", "state", "pid", "heartbeat", "GPUs", "rate", "why"]
    assert lines[1].split()[:4] == ["0", "a", "running", "10"] and "2.0/s" in lines[1]
    assert "0.5/s" in lines[2]
    assert "straggler: node 1 at 0.5 steps/s vs 2.0 on the others, for 6 min" in lines[2]
    assert "straggler" not in lines[1]


def test_equal_nodes_show_rates_and_no_straggler() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    fleet.host("a")
    fleet.host("b")
    two_nodes(fleet, {"0": 0.5, "1": 0.5}, offset=-50.0)
    text = render_nodes(fleet.jobs[JOB], fleet, 1000.0).plain
    assert "straggler" not in text and text.count("2.0/s") == 2, text
