"""`-` in the TUI resizes a running 2-node job in restart mode, through the same core as `gpudeck
scale`: asked first, then a new 1-node job that says what it was resized from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.errors import GpudeckError
from tui.fleet import Fleet
from tui.screens.confirm import ConfirmScreen
from tui.screens.job_actions import resize_plan
from tui.widgets.jobs_table import JobsTable


def cli(*args: str, cwd: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def run_two_nodes(name: str, script: str, workdir: Path) -> str:
    """A 2-node restart-mode job (no launcher) running `bash -c script`, checkpointing in ck/."""
    (workdir / "ck").mkdir()
    return cli(
        "run",
        "--name",
        name,
        "--grace",
        "5",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--",
        "bash",
        "-c",
        script,
        "x",
        "--checkpoint-dir",
        "ck",
        cwd=workdir,
    ).strip()


async def until_two_nodes_run(pilot: object, app: GpuDeckApp, job_id: str) -> None:
    await until(
        pilot,
        lambda: (
            job_id in app.fleet.jobs
            and app.fleet.jobs[job_id].state == "running"
            and len(app.fleet.jobs[job_id].nodes) == 2
        ),
        "the 2-node job running",
    )


@pytest.mark.slow
@sync
async def test_minus_shrinks_a_two_node_job_after_asking(gpudeck_home: Path, workdir: Path) -> None:
    job_id = run_two_nodes(
        "shrink", 'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES"; exec sleep 300', workdir
    )
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_two_nodes_run(pilot, app, job_id)
        await pilot.press("2")
        app.screen.query_one(JobsTable).focus()
        await until(pilot, lambda: app.screen.current_job() is not None, "a selected job")
        assert app.screen.check_action("scale", ("-1",)) and app.screen.check_action("scale", ("+1",))
        await pilot.press(
            "plus"
        )  # the question names the host a new node goes to; `n` leaves the job as it is
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the + question")
        assert "from 2 to 3 nodes: add node 2 on local?" in app.screen.question
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "the question gone")
        await pilot.press("minus")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the question, armed"
        )
        assert "from 2 to 1 node: remove node 1 on local?" in app.screen.question
        await pilot.press("y")
        await until(
            pilot,
            lambda: any(j.id != job_id and j.name == "shrink" and j.active for j in app.fleet.jobs.values()),
            "the resized job",
            timeout=60,
        )
    new = next(j for j in app.fleet.jobs.values() if j.id != job_id and j.name == "shrink")
    obj = json.loads(cli("inspect", "--json", new.id, cwd=workdir))
    assert len(obj["nodes"]) == 1 and obj["resized_from"] == {"job": job_id, "nodes": 2}
    cli("kill", new.id, cwd=workdir)


def _fleet_with_pool_job() -> Fleet:
    fleet = Fleet(clock=lambda: 100.0)
    for host, gpus in (("gpu-a", [[]]), ("gpu-b", [[{"pid": 9}], [{"pid": 9}]]), ("gpu-c", [[], []])):
        fleet.set_host_status(host, "connected")
        fleet.apply_gpus(
            host,
            {
                "available": True,
                "gpus": [{"index": i, "util": 0, "processes": procs} for i, procs in enumerate(gpus)],
            },
        )
    fleet.apply_jobs(
        "gpu-a",
        [
            {
                "id": "20261201-050000-aaaaaa",
                "name": "pooled",
                "node": "0",
                "state": "running",
                "multinode": {
                    "nodes": 1,
                    "rank": 0,
                    "host": "gpu-a",
                    "hosts": ["gpu-a"],
                    "pool": ["gpu-a", "gpu-b", "gpu-c"],
                    "pinned": [],
                    "nproc_per_node": 1,
                },
            }
        ],
    )
    return fleet


def test_plus_names_the_pool_host_with_free_gpus_and_minus_the_unreachable_node() -> None:
    fleet = _fleet_with_pool_job()
    job = fleet.jobs["20261201-050000-aaaaaa"]
    # gpu-b's GPUs are busy, gpu-c's are free: the new node goes to gpu-c, and the resize is pinned there
    assert resize_plan(fleet, job, "+1") == ("add node 1 on gpu-c", ("gpu-c",))
    fleet.set_host_status("gpu-c", "unreachable", "timed out")
    assert resize_plan(fleet, job, "+1") == ("add node 1 on gpu-b", ("gpu-b",))
    fleet.apply_jobs("gpu-b", [{"id": job.id, "name": "pooled", "node": "1", "state": "running"}])
    fleet.set_host_status("gpu-b", "unreachable", "timed out")
    fleet.apply_jobs("gpu-a", [{"id": job.id, "name": "pooled", "node": "2", "state": "running"}])
    assert resize_plan(fleet, job, "-1") == (
        "remove node 1 on gpu-b",
        (),
    )  # not the highest rank: the lost one
    for host in ("gpu-a", "gpu-b"):
        fleet.set_host_status(host, "unreachable", "down")
    with pytest.raises(GpudeckError, match="no host of the pool"):
        resize_plan(fleet, job, "+1")


def test_an_elastic_jobs_plus_names_the_next_node_and_minus_a_running_one() -> None:
    fleet = Fleet(clock=lambda: 100.0)
    fleet.set_host_status("local", "connected")
    mn = {
        "nodes": 2,
        "rank": 0,
        "host": "local",
        "hosts": ["local", "local"],
        "pool": [],
        "pinned": [],
        "nproc_per_node": 1,
        "elastic": [1, 4],
    }
    fleet.apply_jobs(
        "local",
        [
            {"id": "20261201-050000-bbbbbb", "name": "el", "node": node, "state": state, "multinode": mn}
            for node, state in (("0", "running"), ("1", "running"), ("2", "stopped"))
        ],
    )
    job = fleet.jobs["20261201-050000-bbbbbb"]
    assert job.placement.elastic
    # node 2 left (stopped): the next one is node 3, and the one to stop is node 1, the highest running
    assert resize_plan(fleet, job, "+1") == ("add node 3 on local", ("local",))
    assert resize_plan(fleet, job, "-1") == ("remove node 1 on local", ())
