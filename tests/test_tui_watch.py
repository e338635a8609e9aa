"""The TUI lists a watched run (gpudeck watch) with its marker and live loss, and offers no
stop/kill/restart/scale for it unless a pid was given (restart and scale never)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from remote_agent.names import new_job_id
from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient
from tui.widgets.job_stats import render_stats
from tui.widgets.jobs_table import JobsTable

pytestmark = pytest.mark.slow  # the app with two watches: ~5 s

WRITER = str(Path(__file__).parent / "support" / "rotating_writer.py")


def watch(client: AgentClient, log: Path, pid: int | None = None) -> str:
    job_id = new_job_id()
    spec = {
        "id": job_id,
        "name": f"hand-{job_id[-4:]}",
        "node": "0",
        "argv": [],
        "workdir": str(log.parent),
        "watch": {"path": str(log), "pid": pid},
    }
    client.request("launch", timeout=30, spec=spec)
    return job_id


@sync
async def test_the_tui_lists_a_watched_run_with_its_marker_and_its_loss(
    gpudeck_home: Path, agent_dir: Path, client: AgentClient, tmp_path: Path
) -> None:
    log = tmp_path / "train.log"
    read_only = watch(client, log)
    copy = agent_dir / "jobs" / read_only / "0" / "output.log"
    run = subprocess.Popen(
        [sys.executable, WRITER, str(log), str(copy), "lines:6,rotate,lines:4", "--linger"],
        stdout=subprocess.PIPE,
    )
    try:
        with_pid = watch(client, log, pid=run.pid)
        app = GpuDeckApp(store=None)
        async with app.run_test(size=(140, 30)) as pilot:
            await until(
                pilot, lambda: read_only in app.fleet.jobs and with_pid in app.fleet.jobs, "both watches"
            )
            job = app.fleet.jobs[read_only]
            await until(
                pilot, lambda: "loss" in job.series and job.series["loss"].count == 10, "10 loss points"
            )
            assert job.watch is not None and job.watch.read_only and job.watch.path == str(log)
            assert f"watching {log} (read-only)" in str(render_stats(job, app.fleet, time.time()))
            assert f"(pid {run.pid})" in str(render_stats(app.fleet.jobs[with_pid], app.fleet, time.time()))
            await pilot.press("2")
            table = app.screen.query_one(JobsTable)
            await until(pilot, lambda: table.row_count == 2, "two rows")
            assert str(table.get_cell(read_only, "name")).endswith(" watch")

            table.move_cursor(row=table.get_row_index(read_only))
            await until(pilot, lambda: app.screen.current_job() is job, "the read-only watch selected")
            for action, params in (
                ("stop_job", ()),
                ("kill_job", ()),
                ("restart_job", ()),
                ("scale", ("+1",)),
            ):
                assert app.screen.check_action(action, params) is None, action
            assert app.screen.check_action("job_log", ()) is True

            table.move_cursor(row=table.get_row_index(with_pid))
            await until(
                pilot, lambda: app.screen.current_job() is app.fleet.jobs[with_pid], "the pid watch selected"
            )
            assert (
                app.screen.check_action("stop_job", ()) is True
                and app.screen.check_action("kill_job", ()) is True
            )
            assert (
                app.screen.check_action("restart_job", ()) is None
                and app.screen.check_action("scale", ("+1",)) is None
            )
    finally:
        run.kill()
        run.wait()
