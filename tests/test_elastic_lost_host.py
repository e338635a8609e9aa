"""An elastic job whose host is lost goes on without it once torchrun re-forms the survivors: it was
shown `degraded` for good (`ps`, `inspect` and the TUI read node 0's launch-time hosts, where the lost
node stays). A node's agent keeps the last regroup it journaled (`regrouped`: {to, t}); a job whose
last regroup went on at no more nodes than still answer is `running`. Before that regroup (torchrun
waits for the lost node up to its rendezvous timeout) it is degraded, and a job that is not elastic
is degraded until `scale -1` drops the node, as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from remote_agent.jobstate import JobView
from remote_agent.storage.layout import JobFiles
from tests.test_elastic_lead_node import ELASTIC as LEAD_NODE_PLAN
from tui.actions.find import Job
from tui.fleet import Fleet
from tui.widgets.jobs_table import job_row

JOB = "20261206-000100-aaaaaa"
ELASTIC = dict(LEAD_NODE_PLAN, host="box-a", hosts=["box-a", "box-b", "box-c"])  # 3 nodes, elastic 1:3


def node(n: str, regrouped: dict[str, Any] | None = None, plan: dict[str, Any] = ELASTIC) -> dict[str, Any]:
    return {
        "id": JOB,
        "name": "el",
        "node": n,
        "host": plan["hosts"][int(n)],
        "state": "running",
        "multinode": dict(plan, rank=int(n)),
        "regrouped": regrouped,
    }


def test_the_cli_reads_a_lost_node_as_gone_once_the_survivors_regrouped() -> None:
    down = {"box-c": "cannot reach box-c:22: No route to host"}
    before = Job(JOB, "el", [node("0", {"to": 3, "t": 10.0}), node("1")], unreachable=down)
    assert before.state == "degraded"  # torchrun still waits for node 2
    assert before.why == "node 2 on box-c unreachable (cannot reach box-c:22: No route to host)"
    after = Job(
        JOB, "el", [node("0", {"to": 3, "t": 10.0}), node("1", {"to": 2, "t": 50.0})], unreachable=down
    )
    assert after.missing == [] and after.state == "running"
    # still listed, as its host answers nothing: it left the job, it is not lost from sight
    assert [(n["node"], n["state"]) for n in after.to_json()["nodes"]][-1] == ("2", "unreachable")
    plain = dict(ELASTIC, elastic=None)
    static = Job(
        JOB, "ddp", [node("0", {"to": 2, "t": 50.0}, plain), node("1", plan=plain)], unreachable=down
    )
    assert static.state == "degraded"  # a static job does not go on without a node: `scale -1` drops it


def test_a_replacement_that_joined_in_the_lost_nodes_place_keeps_the_job_running() -> None:
    joined = dict(node("1"), node="3", host="box-d")  # a managed recovery's node, named after the highest
    job = Job(JOB, "el", [node("0", {"to": 2, "t": 50.0}), node("1"), joined], unreachable={"box-c": "down"})
    assert job.state == "running"
    # a second host lost after that regroup: degraded again until the next one
    job = Job(
        JOB, "el", [node("0", {"to": 3, "t": 90.0}), joined], unreachable={"box-b": "down", "box-c": "down"}
    )
    assert job.state == "degraded" and [m[0] for m in job.missing] == ["1", "2"]


def test_the_tui_shows_the_regrouped_job_running(tmp_path: Path) -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    for n in ("0", "1", "2"):
        fleet.set_host_status(ELASTIC["hosts"][int(n)], "connected")
        fleet.apply_jobs(ELASTIC["hosts"][int(n)], [node(n)])
    job = fleet.jobs[JOB]
    fleet.set_host_status("box-c", "unreachable", "No route to host")
    assert job_row(job, fleet, 1000.0)[2].plain == "degraded"
    fleet.apply_jobs("box-a", [node("0", {"to": 2, "t": 50.0})])  # the agent's job object
    assert fleet.unreachable_nodes(job) == [] and job_row(job, fleet, 1000.0)[2].plain == "running"
    other = Fleet(clock=lambda: 1000.0)  # or the `resized` event, as a tailed journal brings it
    for n in ("0", "1", "2"):
        other.set_host_status(ELASTIC["hosts"][int(n)], "connected")
        other.apply_jobs(ELASTIC["hosts"][int(n)], [node(n)])
    other.set_host_status("box-c", "unreachable", "No route to host")
    tailed = other.jobs[JOB]
    record = {"kind": "event", "event": "resized", "data": {"from": 3, "to": 2, "why": "unknown"}}
    tailed.apply_record("box-a", tailed.nodes["0"], record, 60.0)
    assert job_row(tailed, other, 1000.0)[2].plain == "running"


def test_the_agent_keeps_a_nodes_last_regroup(tmp_path: Path) -> None:
    directory = tmp_path / "jobs" / "j" / "0"
    directory.mkdir(parents=True)
    records = [
        {"seq": 1, "t": 100.0, "kind": "state", "state": "running", "pid": 1},
        {
            "seq": 2,
            "t": 130.0,
            "kind": "event",
            "event": "resized",
            "data": {"from": 3, "to": 2, "step": 9.0},
        },
        {"seq": 3, "t": 160.0, "kind": "event", "event": "resized", "data": {"from": 2, "to": 3.0}},
        {
            "seq": 4,
            "t": 170.0,
            "kind": "event",
            "event": "resized",
            "data": {"to": "three"},
        },  # garbage: kept out
    ]
    JobFiles(directory).journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert JobView("j", "0", directory).refresh()["regrouped"] == {"to": 3, "t": 160.0}
