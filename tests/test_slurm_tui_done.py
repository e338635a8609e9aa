"""Issue 30's Done-when, driven from the TUI against the real private cluster behind a real sshd
login node: a 2-node job on the Slurm host shows its loss and each node's GPUs live, `+` makes it 3
nodes from its checkpoint, `s` stops it with a checkpoint, the cost is GPU-hours × rate, and a
pending job shows why it waits.

The compute nodes' GPUs are the fake NVML's (the one thing faked): the zipapp the app deploys
carries tests/fakes/nvml/pynvml.py, and the login node's sessions name a GPU file whose UUIDs hold
`{node}`, so each slurmd's supervisor samples GPUs of its own (sbatch exports the environment)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.slurm import SlurmCluster, gpu_login_node
from tests.support.sshd import Sshd, SshHome, free_port
from tests.support.tui import redrawn, select_job, sync, until
from tests.test_slurm_hosts import cluster_host, job_of, launch  # noqa: F401 (fixture)
from tests.test_slurm_resubmit import events, trainer
from tui.app import GpuDeckApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.job import JobScreen
from tui.widgets.gpu_strip import GpuStrip
from tui.widgets.job_nodes import JobNodes
from tui.widgets.jobs_table import job_row

pytestmark = pytest.mark.slow  # a real cluster, torch on each node, the app

RATE = 360.0  # per GPU-hour: a node's 2 GPUs cost 0.2 a second
UTIL = (87, 64)  # each node's two GPUs


@pytest.fixture(scope="module")
def sshd(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = gpu_login_node(slurm_cluster, tmp_path_factory.mktemp("slurm-gpu-login"), UTIL)
    yield server
    server.stop()


def gpu_hours(job_dir: Path) -> float:
    """The job's GPU-hours, from each node's journal: its command's running time (never its pending)
    × its 2 GPUs."""
    seconds = 0.0
    for node in sorted(p for p in job_dir.iterdir() if (p / "events.jsonl").is_file()):
        states = [json.loads(line) for line in (node / "events.jsonl").read_text().splitlines()]
        times = {r["state"]: r["t"] for r in reversed(states) if r.get("kind") == "state"}
        seconds += times["stopped"] - times["running"]
    return seconds * 2 / 3600


@pytest.mark.timeout(900)  # torch on 3 nodes of a loaded machine: ~3 min idle
@sync
async def test_from_the_tui_a_two_node_slurm_job_is_watched_grown_stopped_and_billed(
    fake_nvml_bundled: None,
    cluster_host: str,  # noqa: F811
    slurm_cluster: SlurmCluster,
    ssh_home: SshHome,
    tmp_path: Path,
) -> None:
    pytest.importorskip("torch")
    assert gpudeck("hosts", "set", "cl", f"price_per_gpu_hour={RATE:g}", cwd=tmp_path).returncode == 0
    waits = launch(tmp_path, "--name", "waits", "--nodes", "4", "--launcher", "none", "--", "true")
    job_id = launch(
        tmp_path,
        "--name",
        "done",
        "--grace",
        "30",
        "--nodes",
        "2",
        "--gpus-per-node",
        "2",
        "--master-port",  # not torchrun's default: any other torchrun on this machine may hold it
        str(free_port()),
        *trainer(tmp_path),
    )
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(180, 50)) as pilot:
        # a pending job says why it waits, in the jobs table
        await until(pilot, lambda: waits in app.fleet.jobs, "the pending job", timeout=60)
        await pilot.press("2")
        await until(
            pilot,
            lambda: (
                app.fleet.jobs[waits].state == "pending"
                and "PartitionNodeLimit" in (app.fleet.jobs[waits].why or "")
            ),
            "the pending job's reason",
            timeout=60,
        )
        row = " ".join(str(c) for c in job_row(app.fleet.jobs[waits], app.fleet, time.time()))
        assert "pending" in row and "PartitionNodeLimit" in row, row

        # the 2-node job's loss and each compute node's GPUs, live
        def live() -> bool:
            job = app.fleet.jobs.get(job_id)
            return (
                job is not None
                and job.state == "running"
                and bool(job.series.get("loss"))
                and {"cl/n1", "cl/n2"} <= set(job.gpu_host.values())
            )

        def over() -> bool:  # a job that failed to start says why now, not after the whole wait
            job = app.fleet.jobs.get(job_id)
            return job is not None and job.state in ("failed", "exited", "stopped", "killed")

        try:
            await until(pilot, lambda: live() or over(), "loss and both nodes' GPUs", timeout=300)
            assert live()
        except AssertionError:
            job = app.fleet.jobs.get(job_id)
            seen = job and (job.state, list(job.series), sorted(set(job.gpu_host.values())))
            record = job_of(job_id, tmp_path)
            slurm_id = str((record.get("slurm") or {}).get("job_id", "?"))
            batch = Path(str((record.get("slurm") or {}).get("script"))).parent / f"slurm-{slurm_id}.out"
            raise AssertionError(
                f"{seen}: {gpudeck('logs', job_id, cwd=tmp_path).stdout[-1500:]}\n"
                f"the job: {json.dumps(record)[-3000:]}\nSlurm's logs: {slurm_cluster.log_lines(slurm_id)}\n"
                f"the batch output: {batch.read_text()[-1500:] if batch.is_file() else 'none'}"
            ) from None
        await select_job(pilot, app, job_id)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        await redrawn(pilot, app)
        rows = [line.split() for line in str(app.screen.query_one(JobNodes).content).splitlines()[1:]]
        mean = f"{sum(UTIL) / len(UTIL):.0f}%"
        assert [(r[0], r[1], r[2]) for r in rows] == [("0", "cl/n1", "running"), ("1", "cl/n2", "running")]
        assert all(["2", mean] == r[r.index("ago") + 1 : r.index("ago") + 3] for r in rows if "ago" in r), (
            rows
        )
        strip = str(app.screen.query_one(GpuStrip).content)
        assert "cl/n1" in strip and "cl/n2" in strip and f"{UTIL[0]}" in strip, strip

        # `+`: a new allocation of 3 nodes that resumes at the checkpoint
        await until(
            pilot,
            lambda: (app.fleet.jobs[job_id].step or 0) >= 3,
            "step 3 on 2 nodes",
            timeout=120,
        )
        await pilot.press("plus")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the + question"
        )
        assert "from 2 to 3 nodes: a new allocation of 3 nodes on cl?" in app.screen.question
        await pilot.press("y")

        def grown() -> str | None:
            new = [j for j in app.fleet.jobs.values() if j.name == "done" and j.id != job_id]
            return new[0].id if new and len(new[0].nodes) == 3 and new[0].state == "running" else None

        await until(pilot, grown, "the 3-node job running", timeout=240)
        new = grown()
        assert new is not None
        await until(
            pilot,
            lambda: any(e.name == "resumed" for e in app.fleet.jobs[new].events),
            "the 3-node job resumed",
            timeout=180,
        )
        saved = events(job_id, "0", "checkpoint_saved", tmp_path)
        resumed = events(new, "0", "resumed", tmp_path)
        assert saved and resumed and resumed[0]["step"] == saved[-1]["step"] and resumed[0]["world_size"] == 3
        old = job_of(job_id, tmp_path)
        assert old["state"] == "stopped" and "Slurm: CANCELLED" in json.dumps(old)
        await until(
            pilot, lambda: isinstance(app.screen, JobScreen) and app.screen.job_id == new, "the view follows"
        )

        # the cost column: GPU-hours × rate
        await until(pilot, lambda: app.fleet.jobs[job_id].ended, "the old job ended in the TUI", timeout=60)
        expected = gpu_hours(ssh_home.agent_dir / "jobs" / job_id) * RATE

        def billed() -> float | None:
            cost = app.fleet.costs.jobs.get(job_id)
            return cost.accrued if cost is not None else None

        try:
            await until(pilot, lambda: billed() == pytest.approx(expected, rel=0.01), "the cost", timeout=60)
        except AssertionError:
            raise AssertionError(f"the TUI bills {billed()}, GPU-hours x rate = {expected}") from None

        # `s`: the 3-node job stops with a checkpoint
        await pilot.press("s")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the stop question"
        )
        await pilot.press("y")
        try:
            await until(pilot, lambda: app.fleet.jobs[new].state == "stopped", "stopped", timeout=180)
        except AssertionError:
            raise AssertionError(
                f"the 3-node job is {app.fleet.jobs[new].state}: {job_of(new, tmp_path)}"
            ) from None
        for _ in range(180):  # the stop's worker cancels the allocation once every node ended
            stopped = job_of(new, tmp_path)
            if "Slurm: CANCELLED" in json.dumps(stopped):
                break
            await pilot.pause(1.0)
    assert "Slurm: CANCELLED" in json.dumps(stopped), stopped
    after = events(new, "0", "checkpoint_saved", tmp_path)
    assert after and after[-1]["step"] >= resumed[0]["step"], after  # saved on the stop
    assert gpudeck("kill", waits, cwd=tmp_path, timeout=120).returncode == 0  # not left in the queue
