"""Issue 31, managed `--elastic` jobs against fake agents: a lost node other than node 0 is replaced
by a node that joins the running job (no stop of the survivors, no new job id, the node list records
the move); node 0 lost (it held the rendezvous) relaunches the whole job and says why; journal
first (a cut controller records the join it made, or makes that same join, never a second). The
real thing, torchrun over sshd, is tests/test_managed_elastic_real.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.test_managed import Starts
from tests.test_managed_nodes import JOB, RUNNING, TAKEN, Agents
from tui.actions.options import LaunchOptions
from tui.commands.ps import managed_lines
from tui.errors import GpudeckError
from tui.managed.records import Managed, ManagedDir, Policy
from tui.managed.recover import managed_pass


class Joins:
    """The join step: records each call, and puts the node on its host as a real join would."""

    def __init__(self, agents: Agents, fail: str | None = None) -> None:
        self.agents, self.fail = agents, fail
        self.calls: list[dict[str, str]] = []

    def __call__(self, agents: Any, store: Any, m: Managed, joins: dict[str, str], why: str) -> None:
        self.calls.append(dict(joins))
        if self.fail:
            raise GpudeckError(self.fail)
        for node, host in joins.items():
            self.agents.nodes.setdefault(host, {})[node] = dict(RUNNING)


def elastic_chain(tmp_path: Path, **policy: Any) -> ManagedDir:
    mdir = ManagedDir(tmp_path / "managed")
    opts = LaunchOptions(
        argv=("python", "-m", "trainer"), host="a", hosts=("a", "b"), nodes=2, name="el", elastic=(1, 2)
    )
    fallback = policy.pop("fallback", ("a", "b", "c", "d"))
    mdir.save(Managed(JOB, JOB, "a", opts, Policy(fallback=fallback, **policy), hosts=("a", "b")))
    return mdir


def test_node_1_taken_joins_a_replacement_to_the_running_job(tmp_path: Path) -> None:
    mdir = elastic_chain(tmp_path)
    agents = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}})
    start, join = Starts(), Joins(agents)
    records = managed_pass(agents, None, mdir, start=start, join=join)
    assert [r["outcome"] for r in records] == ["recovering", "recovered"]
    assert records[0]["elastic"] is True and records[0]["to"] == JOB
    assert join.calls == [{"2": "c"}]  # named after the highest node, on the first free candidate
    assert not start.calls and not agents.stops  # no relaunch, and the survivor is never stopped
    [m] = mdir.all()
    assert m.current == JOB and m.node_hosts == ("a", "b", "c") and m.pending is None
    [r] = m.recoveries
    assert (r["from"], r["to"], r["nodes"], r["joined"], r["elastic"]) == (JOB, JOB, [1], ["2"], True)
    assert (r["from_host"], r["to_host"], r["avoid"]) == ("b", "c", "b")

    # the next look asks a and c only, and node 1's end (still listed by b) is no second loss
    assert managed_pass(agents, None, mdir, start=start, join=join) == []
    assert join.calls == [{"2": "c"}] and mdir.all()[0].finished is None

    # the node that joined is lost in turn: the next one is named 3, never on b (cooling down)
    agents.nodes["c"]["2"] = dict(TAKEN)
    managed_pass(agents, None, mdir, start=start, join=join)
    assert join.calls[-1] == {"3": "d"} and mdir.all()[0].node_hosts == ("a", "b", "c", "d")


def test_inspect_says_which_node_joined_in_place_of_which(tmp_path: Path, monkeypatch: Any) -> None:
    mdir = elastic_chain(tmp_path)
    agents = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}})
    managed_pass(agents, None, mdir, start=Starts(), join=Joins(agents))
    monkeypatch.setattr("tui.managed.records.ManagedDir", lambda: mdir)
    lines = managed_lines(JOB)
    assert f"    recovered {JOB} on b → {JOB} on c: node 1: preempted" in lines
    assert (
        "      elastic: node 2 on c joined the running job in place of node 1 on b; the others went on smaller"
        in lines
    )


def test_a_lost_host_of_node_1_joins_too_after_lost_after(tmp_path: Path) -> None:
    mdir = elastic_chain(tmp_path, lost_after=30.0)
    agents = Agents({"a": {"0": RUNNING}}, down={"b"})
    join = Joins(agents)
    assert managed_pass(agents, None, mdir, clock=lambda: 1000.0, start=Starts(), join=join) == []
    records = managed_pass(agents, None, mdir, clock=lambda: 1031.0, start=Starts(), join=join)
    assert records[-1]["outcome"] == "recovered" and join.calls == [{"2": "c"}]
    assert "node 1: host b lost" in records[-1]["why"] and not agents.stops
    # b stays down: it is a departed node's host, not asked again, so no second loss
    assert managed_pass(agents, None, mdir, clock=lambda: 1100.0, start=Starts(), join=join) == []
    assert mdir.all()[0].unreachable == ()


def test_node_0_lost_relaunches_the_whole_job_and_says_why(tmp_path: Path, monkeypatch: Any) -> None:
    mdir = elastic_chain(tmp_path)
    agents = Agents({"a": {"0": TAKEN}, "b": {"1": RUNNING}})
    start, join = Starts(), Joins(agents)
    managed_pass(agents, None, mdir, start=start, join=join)
    assert not join.calls and agents.stops == [("b", "1", "recovery")]
    [(new_id, opts)] = start.calls
    assert opts.hosts == ("c", "b") and opts.elastic == (1, 2)
    [m] = mdir.all()
    assert m.current == new_id and "node 0 held the rendezvous" in m.recoveries[0]["how"]
    monkeypatch.setattr("tui.managed.records.ManagedDir", lambda: mdir)
    assert any("whole job relaunched from its checkpoint" in line for line in managed_lines(new_id))


def test_after_a_join_node_0_lost_relaunches_only_the_nodes_still_in_the_job(tmp_path: Path) -> None:
    mdir = elastic_chain(tmp_path)
    agents = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}})
    start, join = Starts(), Joins(agents)
    managed_pass(agents, None, mdir, start=start, join=join)
    agents.nodes["a"]["0"] = dict(TAKEN)
    managed_pass(agents, None, mdir, start=start, join=join)
    [(new_id, opts)] = start.calls
    assert opts.hosts == ("d", "c")  # node 0 onto d; node 2 on c kept; node 1 (departed) not brought back
    assert agents.stops == [("c", "2", "recovery")]  # only the live survivor checkpoints
    assert mdir.all()[0].node_hosts == ("d", "c")


def test_a_cut_controller_records_the_join_it_made_and_makes_no_second(tmp_path: Path) -> None:
    mdir = elastic_chain(tmp_path)
    [m] = mdir.all()
    pending = {"elastic": True, "new_id": JOB, "joins": {"2": "c"}, "nodes": [1], "why": "node 1: preempted"}
    mdir.save(m.but(pending={**pending, "at": 1.0, "bad": ["b"]}))
    # killed after the launch: node 2 is on c already
    agents = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}, "c": {"2": RUNNING}})
    join = Joins(agents)
    [record] = managed_pass(agents, None, mdir, start=Starts(), join=join)
    assert record["outcome"] == "recovered" and not join.calls
    assert mdir.all()[0].node_hosts == ("a", "b", "c")
    # killed before the launch: that same node is made, once
    mdir2 = elastic_chain(tmp_path / "2")
    [m2] = mdir2.all()
    mdir2.save(m2.but(pending={**pending, "at": 1.0, "bad": ["b"]}))
    agents2 = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}})
    join2 = Joins(agents2)
    managed_pass(agents2, None, mdir2, start=Starts(), join=join2)
    managed_pass(agents2, None, mdir2, start=Starts(), join=join2)
    assert join2.calls == [{"2": "c"}]


def test_a_join_that_fails_is_tried_again_and_the_survivors_run_on(tmp_path: Path) -> None:
    mdir = elastic_chain(tmp_path)
    agents = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}})
    records = managed_pass(agents, None, mdir, start=Starts(), join=Joins(agents, fail="port in use"))
    assert [r["outcome"] for r in records] == ["recovering", "failed"] and records[-1][
        "error"
    ] == "port in use"
    assert mdir.all()[0].pending is None and not agents.stops
    join = Joins(agents)
    assert managed_pass(agents, None, mdir, start=Starts(), join=join)[-1]["outcome"] == "recovered"
    assert join.calls == [{"2": "c"}]


def test_below_the_elastic_minimum_the_whole_job_relaunches(tmp_path: Path) -> None:
    mdir = ManagedDir(tmp_path / "managed")
    opts = LaunchOptions(
        argv=("python", "-m", "trainer"), host="a", hosts=("a", "b"), nodes=2, name="el", elastic=(2, 3)
    )
    mdir.save(Managed(JOB, JOB, "a", opts, Policy(fallback=("a", "b", "c")), hosts=("a", "b")))
    agents = Agents({"a": {"0": RUNNING}, "b": {"1": TAKEN}})
    start, join = Starts(), Joins(agents)
    managed_pass(agents, None, mdir, start=start, join=join)
    assert not join.calls and start.calls[0][1].hosts == ("a", "c")
    assert "minimum 2 nodes" in mdir.all()[0].recoveries[0]["how"]
