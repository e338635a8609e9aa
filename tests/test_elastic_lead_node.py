"""Issue 29, finding 13: a regroup of an elastic job can put rank 0 (the rank that prints) on a node
other than node 0; `ps` then showed node 0's last step, frozen at the regroup, while training went on.
The job's progress is its lead node's: node 0, or in an elastic job the node with the latest point."""

from __future__ import annotations

import json
from pathlib import Path

from remote_agent.jobstate import JobView
from remote_agent.storage.layout import JobFiles
from tui.actions.find import Job

ELASTIC = {
    "nodes": 3,
    "elastic": [1, 3],
    "nproc_per_node": 1,
    "launcher": "torchrun",
    "host": "local",
    "hosts": ["local"] * 3,
    "command": ["python", "train.py"],
}


def node(n: str, step: int | None, t: float | None, plan: dict | None = ELASTIC) -> dict:
    last = {"step": step, "loss": 1.0 / (1 + (step or 0))} if step is not None else {}
    return {
        "id": "j",
        "node": n,
        "host": "local",
        "state": "running",
        "last": last,
        "last_t": t,
        "multinode": dict(plan, rank=int(n)) if plan else None,
    }


def test_an_elastic_jobs_progress_is_the_node_with_the_latest_point() -> None:
    job = Job("j", "el", [node("0", 250, 1000.0), node("1", None, None), node("2", 16767, 1900.0)])
    assert job.lead["node"] == "2"
    shown = job.to_json()
    assert shown["last"]["step"] == 16767 and shown["lead_node"] == "2"  # before: 250, node 0's


def test_a_job_that_is_not_elastic_shows_node_0() -> None:
    plain = dict(ELASTIC, nodes=2, elastic=None, hosts=["local"] * 2)
    job = Job("j", "ddp", [node("0", 5, 10.0, plain), node("1", 9, 20.0, plain)])
    assert job.lead["node"] == "0" and job.to_json()["last"]["step"] == 5


def test_the_agent_dates_a_nodes_last_point(tmp_path: Path) -> None:
    directory = tmp_path / "jobs" / "j" / "0"
    directory.mkdir(parents=True)
    files = JobFiles(directory)
    records = [
        {"seq": 1, "t": 100.0, "kind": "state", "state": "running", "pid": 1},
        {"seq": 2, "t": 101.5, "kind": "metric", "values": {"step": 1, "loss": 0.5}},
        {"seq": 3, "t": 102.0, "kind": "heartbeat"},
    ]
    files.journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    fields = JobView("j", "0", directory).refresh()
    assert fields["last_t"] == 101.5 and fields["last"]["step"] == 1
