"""Issue 35: the TUI's export action (E, Binding id `export_view`): the jobs table, the fleet's GPUs,
a job view's points and a job's processes go to CSV and JSON files under `[ui] export_dir`,
named after the view and the time, and a toast says where. The real app and a real job."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.export_rows import write
from tui.remote.client import AgentClient
from tui.screens.job import JobScreen
from tui.widgets.jobs_table import JobsTable

POINTS = [
    sys.executable,
    "-c",
    "import time\nfor i in range(3): print(f'step={i} loss={1 - i / 10}', flush=True)\ntime.sleep(300)",
]


def test_rows_go_to_a_csv_and_a_json_named_after_the_view(tmp_path: Path) -> None:
    first = write("jobs", ["id", "loss"], [["a,b", 0.5], ["c", None]], tmp_path / "out", now=0)
    second = write("jobs", ["id", "loss"], [], tmp_path / "out", now=0)  # the same second: a new name
    assert first.name.startswith("gpudeck-jobs-") and first != second and second.stem.endswith("-2")
    assert list(csv.reader(first.open())) == [["id", "loss"], ["a,b", "0.5"], ["c", ""]]
    assert json.loads(first.with_suffix(".json").read_text()) == [
        {"id": "a,b", "loss": 0.5},
        {"id": "c", "loss": None},
    ]


def exported(directory: Path, view: str) -> list[dict]:
    found = sorted(directory.glob(f"gpudeck-{view}-*.json"))
    return json.loads(found[-1].read_text()) if found else []


@pytest.mark.slow  # the real app with a real job: ~4 s
@sync
async def test_e_exports_the_jobs_the_fleet_and_a_jobs_points(
    gpudeck_home: Path, client: AgentClient, workdir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "exports"
    (gpudeck_home / "config.toml").write_text(f'[ui]\nexport_dir = "{out}"\n')
    job = launch(client, workdir, POINTS, name="exported")["id"]
    wait_state(client, job, {"running"})
    app = GpuDeckApp()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: job in app.fleet.jobs and app.fleet.jobs[job].active, "the job")
        await pilot.press("E")  # the fleet tab: one row per GPU (or per host without any)
        await until(pilot, lambda: exported(out, "fleet"), "the fleet's file")
        assert exported(out, "fleet")[0]["host"] == "local"
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: table.selected_id == job, "the row")
        await pilot.press("E")
        await until(pilot, lambda: exported(out, "jobs"), "the jobs' file")
        [row] = exported(out, "jobs")
        assert row["id"] == job and row["name"] == "exported" and row["cost"] is None
        assert any("rows to" in n.message and str(out) in n.message for n in app._notifications)
        table.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        await until(
            pilot,
            lambda: (
                len(
                    app.fleet.jobs[job].series.get("loss", ()) and app.fleet.jobs[job].series["loss"].points()
                )
                == 3
            ),
            "the points",
        )
        await pilot.press("E")
        await until(pilot, lambda: exported(out, "points-exported"), "the points' file")
        assert [(p["metric"], p["x"], p["value"]) for p in exported(out, "points-exported") if p["metric"] == "loss"] == [
            ("loss", 0.0, 1.0), ("loss", 1.0, 0.9), ("loss", 2.0, 0.8)
        ]  # fmt: skip
    client.request("kill", job=job, node="0")
