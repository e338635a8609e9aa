"""The job view lists a multi-node job's nodes (a one-node job's view has no list), a resized job
says what it was resized from, and the jobs table shows the node count beside the host."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.fleet import Fleet, ResizedFrom
from tui.screens.job import JobScreen
from tui.widgets.job_nodes import JobNodes, render_nodes
from tui.widgets.job_stats import render_stats
from tui.widgets.jobs_table import job_row

NEW, OLD = "20261201-000100-bbbbbb", "20261201-000000-aaaaaa"


def cli(*args: str, cwd: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def node(n: str, state: str = "running", **kw: object) -> dict:
    return {"host": "local", "node": n, "state": state, "pid": 100 + int(n), **kw}


def test_a_resized_job_says_what_it_was_resized_from() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    changes = fleet.apply_jobs(
        "local",
        [
            {
                "id": NEW,
                "name": "shrink",
                "state": "running",
                "nodes": [node("0")],
                "resized_from": {"job": OLD, "nodes": 2},
            }
        ],
    )
    job = fleet.jobs[NEW]
    assert "job" in changes and job.resized_from == ResizedFrom(OLD, 2)
    assert f"resized from 2 nodes ({OLD})" in render_stats(job, fleet, 1000.0).plain
    # the agent's per-node shape carries it too; garbage is ignored, never shown
    fleet.apply_jobs(
        "local",
        [
            {"id": "x", "node": "0", "state": "running", "resized_from": {"job": OLD, "nodes": 3}},
            {"id": "y", "node": "0", "state": "running", "resized_from": {"job": 5, "nodes": "[b]2"}},
        ],
    )
    assert fleet.jobs["x"].resized_from == ResizedFrom(OLD, 3) and fleet.jobs["y"].resized_from is None
    assert "resized" not in render_stats(fleet.jobs["y"], fleet, 1000.0).plain


def test_node_rows_say_state_why_pid_heartbeat_and_gpus() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    fleet.apply_jobs(
        "[b]gpu1",
        [
            {
                "id": NEW,
                "state": "failed",
                "nodes": [node("1", "failed", host="[b]gpu1", exit_code=3), node("0", host="local")],
            }
        ],
    )
    job = fleet.jobs[NEW]
    job.apply_record("[b]gpu1", job.nodes["1"], {"kind": "heartbeat"}, 990.0)
    job.apply_record(
        "[b]gpu1",
        job.nodes["1"],
        {"kind": "gpu", "gpus": [{"index": 0, "util": 80}, {"index": 1, "util": 40}]},
        990.0,
    )
    lines = render_nodes(job, fleet, 1000.0).plain.splitlines()
    assert lines[0].split() == ["node", "host", "state", "pid", "heartbeat", "GPUs", "why"]
    assert lines[1].split() == ["0", "local", "running", "100", "—", "—"]
    assert lines[2].split() == [
        "1",
        "[b]gpu1",
        "failed",
        "101",
        "10s",
        "ago",
        "2",
        "60%",
        "exit",
        "code",
        "3",
    ]
    row = job_row(job, fleet, 1000.0)[1]
    assert row.plain == "[b]gpu1 ×2"  # the first host and the node count: `×N` never cut
    fleet.apply_jobs("local", [{"id": OLD, "state": "running", "nodes": [node("0")]}])
    assert job_row(fleet.jobs[OLD], fleet, 1000.0)[1].plain == "local"


@pytest.mark.slow
@sync
async def test_the_job_view_lists_both_nodes_of_a_two_node_job(gpudeck_home: Path, workdir: Path) -> None:
    script = "echo rank=$GPUDECK_NODE_RANK; exec sleep 300"
    job_id = cli("run", "--nodes", "2", "--launcher", "none", "--", "bash", "-c", script, cwd=workdir).strip()
    try:
        app = GpuDeckApp(store=None)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(
                pilot,
                lambda: (
                    job_id in app.fleet.jobs
                    and len(app.fleet.jobs[job_id].nodes) == 2
                    and all(n.state == "running" for n in app.fleet.jobs[job_id].nodes.values())
                ),
                "both nodes running",
            )
            app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, job_id))
            await until(
                pilot,
                lambda: (
                    isinstance(app.screen, JobScreen) and any(w.display for w in app.screen.query(JobNodes))
                ),
                "the node list shown",
            )
            job = app.fleet.jobs[job_id]
            await until(pilot, lambda: all(n.pid for n in job.nodes.values()), "both pids")
            await pilot.pause(0.2)
            rows = [line.split() for line in str(app.screen.query_one(JobNodes).content).splitlines()[1:]]
            pids = {n.node: str(n.pid) for n in job.nodes.values()}
            assert [r[:4] for r in rows] == [
                ["0", "local", "running", pids["0"]],
                ["1", "local", "running", pids["1"]],
            ]
    finally:
        cli("kill", job_id, cwd=workdir)
