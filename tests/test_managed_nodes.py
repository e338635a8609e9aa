"""Issue 31, multi-node managed jobs against fake agents: only the lost node's host is replaced
(the others keep theirs and are stopped to checkpoint first), a host lost or a node taken alike,
journal first (a cut recovery launches the same id), and a chain that cannot be recovered waits or
gives up explicitly. The real thing, over sshd, is tests/test_managed_multinode.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.test_managed import Starts
from tui.actions.options import LaunchOptions
from tui.errors import GpudeckError
from tui.managed.chain_cost import chain_costs, chain_lines
from tui.managed.records import Managed, ManagedDir, Policy
from tui.managed.recover import managed_pass

JOB = "20261205-100000-aaaaaa"


class Agents:
    """Hosts answering `jobs` with the nodes they hold (node → state), `gpus`, and `stop`."""

    def __init__(self, nodes: dict[str, dict[str, dict[str, Any]]], down: set[str] = frozenset()) -> None:
        self.nodes, self.down = nodes, set(down)  # host → node → fields
        self.stops: list[tuple[str, str, str]] = []
        self.notices: list[str] = []

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        if host in self.down:
            raise GpudeckError(f"host {host} unreachable: Connection refused")
        if op == "jobs":
            return {
                "jobs": [
                    dict(f, id=JOB, node=n) for n, f in self.nodes.get(host, {}).items() if JOB in args["ids"]
                ]
            }
        if op == "stop":
            self.stops.append((host, args["node"], args["reason"]))
            return {}
        return {"gpus": [{"uuid": "GPU-a", "processes": []}]}

    def hosts(self) -> list[str]:
        return ["a", "b", "c", "d"]

    def notice(self, line: str) -> None:
        self.notices.append(line)


def chain(tmp_path: Path, fallback: tuple[str, ...] = ("a", "b", "c"), **policy: Any) -> ManagedDir:
    mdir = ManagedDir(tmp_path / "managed")
    opts = LaunchOptions(argv=("python", "train.py"), host="a", hosts=("a", "b"), nodes=2, name="two")
    mdir.save(Managed(JOB, JOB, "a", opts, Policy(**{"fallback": fallback, **policy}), hosts=("a", "b")))
    return mdir


RUNNING = {"state": "running"}
TAKEN = {"state": "stopped", "reason": "preempted"}


def test_a_taken_node_is_replaced_alone_and_the_other_stops_to_checkpoint(tmp_path: Path) -> None:
    mdir = chain(tmp_path)
    agents, start = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}}), Starts()
    records = managed_pass(agents, None, mdir, start=start)
    assert [r["outcome"] for r in records] == ["recovering", "recovered"]
    [(new_id, opts)] = start.calls
    assert opts.hosts == ("a", "c") and opts.nodes == 2 and opts.restart_of == JOB  # b's node onto c
    assert agents.stops == [("a", "0", "recovery")]  # the survivor checkpoints; the taken one is not asked
    [m] = mdir.all()
    assert m.node_hosts == ("a", "c") and m.current == new_id
    assert m.recoveries[0]["nodes"] == [1] and m.recoveries[0]["to_host"] == "c"
    assert m.recoveries[0]["why"] == "node 1: preempted"


def test_node_0_taken_keeps_node_1_on_its_host(tmp_path: Path) -> None:
    mdir = chain(tmp_path)
    start = Starts()
    managed_pass(Agents({"a": {"0": TAKEN}, "b": {"1": RUNNING}}), None, mdir, start=start)
    assert start.calls[0][1].hosts == ("c", "b") and start.calls[0][1].host == "c"


def test_a_lost_host_waits_for_lost_after_then_only_its_node_moves(tmp_path: Path) -> None:
    mdir = chain(tmp_path, lost_after=30.0)
    agents, start = Agents({"a": {"0": RUNNING}}, down={"b"}), Starts()
    assert managed_pass(agents, None, mdir, clock=lambda: 1000.0, start=start) == []
    assert mdir.all()[0].unreachable == (("b", 1000.0),)
    assert managed_pass(agents, None, mdir, clock=lambda: 1020.0, start=start) == []
    records = managed_pass(agents, None, mdir, clock=lambda: 1031.0, start=start)
    assert records[-1]["outcome"] == "recovered" and start.calls[0][1].hosts == ("a", "c")
    assert "node 1: host b lost" in records[-1]["why"] and agents.stops == [("a", "0", "recovery")]


def test_a_host_that_answers_again_is_no_loss(tmp_path: Path) -> None:
    mdir = chain(tmp_path, lost_after=30.0)
    agents, start = Agents({"a": {"0": RUNNING}, "b": {"1": RUNNING}}, down={"b"}), Starts()
    managed_pass(agents, None, mdir, clock=lambda: 1000.0, start=start)
    agents.down = set()
    managed_pass(agents, None, mdir, clock=lambda: 1010.0, start=start)
    agents.down = {"b"}
    assert managed_pass(agents, None, mdir, clock=lambda: 1035.0, start=start) == []  # since 1035, not 1000
    assert not start.calls


def test_a_cut_recovery_stops_the_survivor_again_and_launches_the_same_id(tmp_path: Path) -> None:
    mdir = chain(tmp_path)
    [m] = mdir.all()
    pending = {
        "new_id": "20261205-100001-bbbbbb",
        "host": "a",
        "hosts": ["a", "c"],
        "nodes": [1],
        "bad": ["b"],
    }
    mdir.save(m.but(pending={**pending, "why": "node 1: preempted", "at": 1.0}))
    agents = Agents({"a": {"0": {"state": "stopped", "reason": "recovery"}}})
    start = Starts(fail="job 20261205-100001-bbbbbb node 0 already exists")  # the killed one launched it
    [record] = managed_pass(agents, None, mdir, start=start)
    assert record["outcome"] == "recovered" and [c[0] for c in start.calls] == ["20261205-100001-bbbbbb"]
    assert mdir.all()[0].node_hosts == ("a", "c")


def test_no_free_candidate_waits_and_none_left_gives_up(tmp_path: Path) -> None:
    mdir = chain(tmp_path)
    agents, start = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}}, down={"c"}), Starts()
    [record] = managed_pass(agents, None, mdir, start=start)
    assert record["outcome"] == "waiting" and not start.calls and not agents.stops  # the survivor goes on
    mdir = chain(tmp_path / "2", fallback=("a", "b"))  # a keeps node 0, b was taken: nothing left
    [record] = managed_pass(agents, None, mdir, start=start)
    assert record["outcome"] == "gave_up" and "no candidate host left (node 1: preempted)" in record["why"]
    assert agents.notices and mdir.all()[0].finished.startswith("gave up")


def test_the_chain_has_one_cost_and_a_recovery_line(tmp_path: Path) -> None:
    mdir = chain(tmp_path)
    managed_pass(Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}}), None, mdir, start=Starts())
    new = mdir.all()[0].current
    jobs = [
        {"id": JOB, "accrued_usd": 1.25},
        {"id": new, "accrued_usd": 2.0},
        {"id": "other", "accrued_usd": 9},
    ]
    [c] = chain_costs(jobs, mdir)
    assert (c["jobs"], c["accrued_usd"], c["recovery_usd"], c["recoveries"]) == ([JOB, new], 3.25, 1.25, 1)
    assert chain_lines([c], lambda v: f"${v:.2f}") == [
        f"chain two ({JOB}): 2 jobs, $3.25",
        "  recovery: 1 recovery, $1.25 on the jobs replaced",
    ]
    jobs[0]["accrued_usd"] = None  # a host of unknown price: the total is unknown, never smaller
    assert chain_costs(jobs, mdir)[0]["accrued_usd"] is None
