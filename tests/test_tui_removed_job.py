"""Issue 36 finding 5: a job removed from the CLI (`gpudeck rm`) stayed in an open TUI for minutes
(counted in the header, its log "0 lines · ● following", `r` `y` failing with a raw `[Errno 2] …
spec.json`). A real local job, removed by the real CLI while the pilot app runs, leaves the table on
the next `jobs` poll; the open job view says it was removed; `y` on its restart question says one
clear line."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import launch, wait_state
from tests.support.tui import open_a_job, sync, until
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient
from tui.screens.confirm import ConfirmScreen
from tui.screens.deck import DeckScreen
from tui.screens.job import JobScreen
from tui.screens.logs import LogScreen
from tui.widgets.jobs_table import JobsTable


@pytest.mark.slow
@sync
async def test_a_job_removed_by_the_cli_leaves_the_open_tui(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    gone = launch(client, workdir, [sys.executable, "-c", "print('bye')"], name="gone")["id"]
    kept = launch(client, workdir, [sys.executable, "-c", "print('hi')"], name="kept")["id"]
    for job_id in (gone, kept):
        wait_state(client, job_id, {"exited"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: {gone, kept} <= set(app.fleet.jobs), "both jobs")
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: table.selected_id is not None, "a row")
        if table.selected_id != gone:
            await pilot.press("down")
        await until(pilot, lambda: table.selected_id == gone, "the job to remove selected")
        await open_a_job(pilot, app)
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "its view")
        view = app.screen
        await pilot.press("r")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the restart question"
        )

        removed = await asyncio.to_thread(gpudeck, "rm", gone)
        assert removed.returncode == 0, removed.stderr
        await until(pilot, lambda: gone not in app.fleet.jobs, "the removed job gone from the fleet")
        assert kept in app.fleet.jobs and app.fleet.summary().jobs_total == 1

        await pilot.press("y")  # the question asked before the job went
        await until(pilot, lambda: app.screen is view, "back on the job view")
        await until(
            pilot, lambda: any("was removed" in str(n.message) for n in app._notifications), "one line"
        )
        said = [str(n.message) for n in app._notifications]
        assert not any("Errno" in line or "spec.json" in line for line in said), said
        assert set(app.fleet.jobs) == {kept}  # no restart made a new job
        assert "removed" in str(view.query_one("#proposal").render())
        assert view.check_action("restart_job", ()) is None

        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeckScreen), "the deck")
        await until(pilot, lambda: table.row_count == 1, "one row left")
        assert table.selected_id == kept


@pytest.mark.slow
@sync
async def test_a_restart_of_a_job_removed_before_the_tui_noticed_says_one_line(
    gpudeck_home: Path, client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.services import connections as feed

    gone = launch(client, workdir, [sys.executable, "-c", "print('bye')"], name="gone")["id"]
    wait_state(client, gone, {"exited"})
    monkeypatch.setattr(feed, "JOBS_PERIOD", 3600.0)  # the TUI does not look again: it still lists it
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: gone in app.fleet.jobs, "the job")
        await open_a_job(pilot, app)
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "its view")
        removed = await asyncio.to_thread(gpudeck, "rm", gone)
        assert removed.returncode == 0, removed.stderr
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the question")
        await pilot.press("y")
        await until(
            pilot,
            lambda: any("was removed" in str(n.message) for n in app._notifications),
            f"the agent's refusal (said: {[str(n.message) for n in app._notifications]})",
        )
        said = [str(n.message) for n in app._notifications]
        assert not any("Errno" in line or "spec.json" in line for line in said), said


@pytest.mark.slow
@sync
async def test_an_open_full_log_says_its_job_was_removed(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    gone = launch(client, workdir, [sys.executable, "-c", "print('bye')"], name="gone")["id"]
    wait_state(client, gone, {"exited"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: gone in app.fleet.jobs, "the job")
        await open_a_job(pilot, app)
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "its view")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, LogScreen), "its full log")
        title = app.screen.query_one("#log-title")
        await until(pilot, lambda: "1 lines" in str(title.render()), "the log read")
        removed = await asyncio.to_thread(gpudeck, "rm", gone)
        assert removed.returncode == 0, removed.stderr
        await until(pilot, lambda: "removed (gpudeck rm)" in str(title.render()), "the title saying so")
        assert "following" not in str(title.render())
