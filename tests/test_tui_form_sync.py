"""The new-job form brings code, secrets and requirements as `run` does: a directory to sync, env
files read in a worker (their values stay secret), and each local mistake refused in the form with
its field focused and nothing typed lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.screens.launch import LaunchScreen

pytestmark = pytest.mark.slow  # a real app and a real job

SHOW = "import os; print('SECRET', os.environ['FORM_TOKEN'] == 'hunter2', open('marker.txt').read())"


@sync
async def test_the_form_syncs_a_directory_and_reads_env_files(gpudeck_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "marker.txt").write_text("from the snapshot")
    env_file = tmp_path / "secrets.env"
    env_file.write_text("FORM_TOKEN=hunter2\n")
    bad_env = tmp_path / "bad.env"
    bad_env.write_text("not a line\n")
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 50)) as pilot:
        await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
        form = app.screen
        form.query_one("#command").value = f"python3 -c {json.dumps(SHOW)}"
        form.query_one("#name").value = "form-sync"
        form.query_one("#sync").value = str(tmp_path / "nope")
        await pilot.press("ctrl+s")
        await until(
            pilot, lambda: "no such directory" in str(form.query_one("#error").render()), "sync refused"
        )
        assert form.query_one("#sync").has_focus and form.query_one("#name").value == "form-sync"
        form.query_one("#sync").value = str(project)
        form.query_one("#env_files").value = str(bad_env)
        await pilot.press("ctrl+s")
        await until(
            pilot, lambda: f"{bad_env}:1" in str(form.query_one("#error").render()), "env file refused"
        )
        assert form.query_one("#env_files").has_focus and app.screen is form and not app.fleet.jobs
        form.query_one("#env_files").value = str(env_file)
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: any(j.name == "form-sync" and j.state == "exited" for j in app.fleet.jobs.values()),
            "the synced job ran",
            timeout=60,
        )
    # job dirs only: the agent's listing cache (jobs/listing.cache.json) lies beside them once a
    # listing has seen the job ended, which a loaded machine's TUI gets to before the test's end
    (job,) = [p for p in (gpudeck_home / "local-agent" / "jobs").iterdir() if p.is_dir()]
    output = (job / "0" / "output.log").read_text()
    assert "SECRET True from the snapshot" in output  # its workdir is the snapshot; the env file's value
    spec = json.loads((job / "0" / "spec.json").read_text())
    assert spec["code"]["files"] == 1 and spec["workdir"].endswith(f"work/{job.name}")
