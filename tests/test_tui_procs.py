"""The process view on the real app and real processes: `p` on a job shows its tree with CPU %, RSS
and roles measured by the agent, and `K` there kills the job through the confirm; `p` on the fleet
picks a GPU and shows the processes NVML sees on it with their GPU memory (NVML faked at its import
boundary, in the app's own agent)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from textual.widgets import DataTable

from tests.support.jobs import launch, wait_state
from tests.support.tui import select_a_job, sync, until
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient
from tui.screens.confirm import ConfirmScreen
from tui.screens.deck import DeckScreen
from tui.screens.gpu_pick import GpuPickScreen
from tui.screens.procs import ProcessesScreen

FAKE_DIR = Path(__file__).resolve().parent / "fakes" / "nvml"
MIB = 1024 * 1024
TREE = (
    "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', 'b = bytearray(64 << 20)\\nwhile True: b[0] = 1']).wait()"
)
COLUMNS = ["host", "node", "PID", "role", "CPU %", "RSS", "GPU", "GPU mem", "command"]


def rows(app: GpuDeckApp) -> list[dict[str, str]]:
    table = app.screen.query_one("#procs", DataTable)
    return [
        dict(zip(COLUMNS, (str(c) for c in table.get_row_at(i)), strict=True)) for i in range(table.row_count)
    ]


def spinning_child(app: GpuDeckApp) -> dict[str, str] | None:
    if not isinstance(app.screen, ProcessesScreen):
        return None
    found = [r for r in rows(app) if r["role"] == "child" and "bytearray" in r["command"]]
    return found[0] if found and found[0]["CPU %"] not in ("n/a", "0") else None


@pytest.mark.slow
@sync
async def test_p_shows_the_tree_with_cpu_and_rss_and_K_kills_from_there(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job = launch(client, workdir, [sys.executable, "-c", TREE], name="tree")
    running = wait_state(client, job["id"], {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(140, 30)) as pilot:
        await until(
            pilot, lambda: job["id"] in app.fleet.jobs and app.fleet.jobs[job["id"]].active, "the job"
        )
        await select_a_job(pilot, app)
        await pilot.press("p")
        await until(pilot, lambda: spinning_child(app), "the spinning child, measured")
        child = spinning_child(app)
        assert child is not None and child["host"] == "local" and child["node"] == "0"
        assert child["RSS"].endswith("MiB") and float(child["RSS"].split()[0]) >= 64
        by_role = {r["role"]: r["PID"] for r in rows(app) if r["role"] != "child"}
        assert by_role == {"command": str(running["pid"]), "supervisor": str(running["supervisor_pid"])}
        assert "not available" not in app.export_screenshot().replace("&#160;", " ")

        await pilot.press("K")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the kill question"
        )
        await pilot.press("y")
        await until(pilot, lambda: app.fleet.jobs[job["id"]].state == "killed", "killed")
        await until(
            pilot, lambda: isinstance(app.screen, ProcessesScreen) and not rows(app), "no process left"
        )
        assert app.screen.check_action("kill_job", ()) is None  # nothing left to kill: the key is off
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeckScreen), "closed")


@pytest.mark.slow
@sync
async def test_p_on_the_fleet_picks_a_gpu_and_shows_its_processes(
    gpudeck_home: Path, client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = launch(client, workdir, [sys.executable, "-c", "import time; time.sleep(60)"], name="on-gpu")
    pid = wait_state(client, job["id"], {"running"})["pid"]
    gpus = [
        {"uuid": "GPU-0", "name": "NVIDIA H100 80GB HBM3", "util": 97, "compute": [[pid, 1234 * MIB]]},
        {"uuid": "GPU-1", "name": "NVIDIA H100 80GB HBM3"},
    ]
    monkeypatch.setenv("PYNVML_FAKE", json.dumps(gpus))  # the app's own agent starts with these GPUs
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_DIR), os.environ.get("PYTHONPATH", "")]))
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: len(app.fleet.hosts["local"].gpus) == 2, "the GPUs")
        await until(pilot, lambda: app.screen.active_bindings["p"].binding.id == "gpu_procs", "the fleet's p")
        assert app.screen.active_bindings["p"].enabled  # the Footer shows it usable, not greyed
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, GpuPickScreen), "the GPU picker")
        await pilot.press("enter")  # the first GPU: GPU 0 of local
        await until(pilot, lambda: isinstance(app.screen, ProcessesScreen) and rows(app), "its processes")
        [row] = rows(app)
        assert (row["PID"], row["role"], row["GPU"], row["GPU mem"]) == (str(pid), "gpu", "0", "1234 MiB")
        assert row["CPU %"] != "n/a" and row["RSS"] != "n/a" and "time.sleep" in row["command"]
        assert "Processes on GPU 0 of local" in app.export_screenshot().replace("&#160;", " ")
    client.request("kill", job=job["id"], node="0")
