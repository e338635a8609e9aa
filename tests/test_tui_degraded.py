"""The TUI's side of a degraded job: a running multi-node job whose node's host is unreachable
shows `degraded` and why in the jobs table, that node as `unreachable` in the job view; a host
that answers again, or a one-node job, shows no such thing."""

from __future__ import annotations

from tui.fleet import Fleet
from tui.widgets.job_nodes import render_nodes
from tui.widgets.jobs_table import job_row

JOB = "20261201-000100-bbbbbb"


def two_nodes(fleet: Fleet, state: str = "running") -> None:
    for host, rank in (("box-a", "0"), ("box-b", "1")):
        fleet.set_host_status(host, "connected")
        fleet.apply_jobs(
            host, [{"id": JOB, "name": "deg", "node": rank, "state": state, "pid": 10 + int(rank)}]
        )


def test_an_unreachable_host_degrades_a_running_multinode_job() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    two_nodes(fleet)
    job = fleet.jobs[JOB]
    assert fleet.unreachable_nodes(job) == [] and job_row(job, fleet, 1000.0)[2].plain == "running"
    fleet.set_host_status("box-b", "unreachable", "cannot reach root@10.0.0.2:22: Connection refused")
    assert fleet.unreachable_nodes(job) == [
        ("1", "box-b", "cannot reach root@10.0.0.2:22: Connection refused")
    ]
    row = job_row(job, fleet, 1000.0)
    assert row[2].plain == "degraded"
    assert row[-1].plain == "node 1 on box-b unreachable (cannot reach root@10.0.0.2:22: Connection refused)"
    lines = render_nodes(job, fleet, 1000.0).plain.splitlines()
    assert lines[1].split()[:3] == ["0", "box-a", "running"] and lines[2].split()[:3] == [
        "1",
        "box-b",
        "unreachable",
    ]
    fleet.set_host_status("box-b", "reconnecting", "cut")  # trying again: not (yet) unreachable
    assert job_row(job, fleet, 1000.0)[2].plain == "running"


def test_an_ended_job_or_a_one_node_job_is_never_degraded() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    two_nodes(fleet, state="stopped")
    fleet.set_host_status("box-b", "unreachable", "down")
    assert (
        fleet.unreachable_nodes(fleet.jobs[JOB]) == []
        and job_row(fleet.jobs[JOB], fleet, 1000.0)[2].plain == "stopped"
    )
    fleet.apply_jobs("box-b", [{"id": "20261201-000200-cccccc", "node": "0", "state": "running"}])
    assert fleet.unreachable_nodes(fleet.jobs["20261201-000200-cccccc"]) == []
