"""A job's nodes start all at once (launch and a resize's relaunch), and a node that fails to start
leaves no other node of the job running. The Agents protocol is answered by a recorder here (as in
test_core_rules.py); the real agents start real nodes in test_scale.py."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest

from remote_agent.spec import JobSpec, Multinode
from tui.actions.launch import launch_specs
from tui.actions.startall import NodeStartFailed, Start, start_all
from tui.errors import GpudeckError

JOB = "20260101-000000-abcdef"


class Starting:
    """Each start blocks until every node's start has arrived: one after the other, none returns."""

    def __init__(self, nodes: int, fail: set[str] = frozenset()) -> None:
        self.together = threading.Barrier(nodes, timeout=20)
        self.fail = fail
        self.kills: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def hosts(self) -> list[str]:
        return ["a", "b", "c"]

    def notice(self, line: str) -> None:
        pass

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        if op == "kill":
            with self.lock:
                self.kills.append((host, args["node"]))
            return {"state": "killed"}
        node = args["spec"]["node"] if op == "launch" else args["as_node"]
        try:
            self.together.wait()
        except threading.BrokenBarrierError:
            raise AssertionError(f"node {node} waited alone: the starts were not sent together") from None
        if node in self.fail:
            raise GpudeckError(f"{host}: could not launch job {JOB}: no space left on device")
        return {"state": "running", "node": node, "name": "job"}


def test_every_node_starts_at_once_and_answers_come_back_in_order() -> None:
    starts = [Start(h, str(i), JOB, "launch", {"spec": {"node": str(i)}}) for i, h in enumerate("abc")]
    answers = start_all(Starting(3), starts)
    assert [a["node"] for a in answers] == ["0", "1", "2"]


def test_a_node_that_fails_to_start_ends_the_ones_that_started() -> None:
    agents = Starting(3, fail={"1"})
    starts = [
        Start(h, str(i), JOB, "restart", {"job": "old", "node": "0", "new_id": JOB, "as_node": str(i)})
        for i, h in enumerate("abc")
    ]
    with pytest.raises(NodeStartFailed) as err:
        start_all(agents, starts)
    assert (err.value.start.node, err.value.start.host) == ("1", "b")
    assert "no space left on device" in str(err.value)
    assert sorted(agents.kills) == [("a", "0"), ("c", "2")]  # the two that started; node 1 never ran


def test_a_launch_names_the_node_that_failed_in_one_line() -> None:
    agents = Starting(2, fail={"1"})
    specs = [(h, JobSpec(JOB, "x", str(i), ("true",))) for i, h in enumerate("ab")]
    with pytest.raises(
        GpudeckError, match=r"^node 1 on b: b: could not launch job .*: no space left on device$"
    ):
        launch_specs(agents, specs)
    assert agents.kills == [("a", "0")]


class InOrder:
    """Records the order of the starts; node 1 fails."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def hosts(self) -> list[str]:
        return ["local"]

    def notice(self, line: str) -> None:
        pass

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        node = args["spec"]["node"] if op == "launch" else args["node"]
        self.asked.append((op, node))
        if op == "launch" and node == "1":
            raise GpudeckError("local: could not launch: no space left on device")
        return {"state": "running"}


def test_an_elastic_launch_starts_node_0_first_and_stops_at_the_first_failure() -> None:
    # torchrun's c10d rendezvous ranks one host's nodes by pid: node 0 first keeps it rank 0
    agents = InOrder()
    plan = Multinode(nodes=3, rank=0, host="local", hosts=("local",) * 3, elastic=(1, 3))
    specs = [
        ("local", JobSpec(JOB, "x", str(i), ("true",), multinode=replace(plan, rank=i))) for i in range(3)
    ]
    with pytest.raises(GpudeckError, match="^node 1 on local: "):
        launch_specs(agents, specs)
    assert agents.asked == [("launch", "0"), ("launch", "1"), ("kill", "0")]  # node 2 never started
