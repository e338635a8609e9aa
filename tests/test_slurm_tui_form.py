"""The launch form's Slurm fields (issue 30): shown when the chosen host is a Slurm host (its
hosts.toml defaults as placeholders), hidden for any other host; a bad value is refused in the form
naming its field; the allocation asked there is the one sbatch gets. Against the real cluster
(the job is submitted, then killed: what it runs is not this test's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import Sshd
from tests.support.tui import sync, until
from tests.test_slurm_hosts import cluster_host, job_of  # noqa: F401 (fixture)
from tui.app import GpuDeckApp
from tui.screens.launch import LaunchScreen

pytestmark = pytest.mark.slow  # a real cluster behind a login over SSH, and the app


@pytest.fixture(scope="session")
def sshd(slurm_login: Sshd) -> Sshd:
    return slurm_login


@pytest.mark.timeout(180)
@sync
async def test_the_form_asks_a_slurm_hosts_allocation_and_sbatch_gets_it(
    cluster_host: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 60)) as pilot:
        await until(pilot, lambda: app.fleet.hosts.get("cl") and app.fleet.hosts["cl"].up, "the cluster up")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
        form = app.screen
        fields = form.query_one("#slurm-fields")
        form.query_one("#host").value = "local"
        await until(pilot, lambda: not fields.display, "no Slurm fields for local")
        form.query_one("#host").value = "cl"
        await until(pilot, lambda: fields.display, "the Slurm fields for cl")
        assert form.query_one("#slurm_partition").placeholder == "the host's: gpu"
        form.query_one("#command").value = "python train.py"  # submitted, not run: the script is checked
        form.query_one("#name").value = "formed"
        form.query_one("#workdir").value = str(tmp_path)
        form.query_one("#slurm_nodes").value = "two"
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: "nodes: expected a whole number" in str(form.query_one("#error").render()),
            "refused",
        )
        assert app.screen is form and not app.fleet.jobs
        form.query_one("#slurm_nodes").value = "2"
        form.query_one("#slurm_gpus_per_node").value = "1"
        form.query_one("#slurm_time").value = "10:00"
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: any(j.name == "formed" and len(j.nodes) == 2 for j in app.fleet.jobs.values()),
            "the formed job's two nodes",
            timeout=90,
        )
    job_id = next(j.id for j in app.fleet.jobs.values() if j.name == "formed")
    shown = json.loads(gpudeck("inspect", "--json", job_id, cwd=tmp_path).stdout)
    script = Path(shown["slurm"]["script"]).read_text()
    for asked in ("--nodes=2", "--gpus-per-node=1", "--time=10:00", "--partition=gpu"):
        assert asked in script, script
    assert gpudeck("kill", job_id, cwd=tmp_path, timeout=120).returncode == 0
