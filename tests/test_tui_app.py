"""The app driven with Pilot against the real `local` agent: launch from the form, watch points
arrive, stop, kill, restart, and the form swallowing printable keys. Waits poll conditions."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.support.jobs import alive
from tests.support.tui import named, sync, until
from tui.actions.options import DEMO_COMMAND
from tui.app import GpuDeckApp
from tui.fleet import JobModel
from tui.screens.confirm import ConfirmScreen
from tui.screens.deck import DeckScreen
from tui.screens.help import HelpScreen
from tui.screens.job import JobScreen
from tui.screens.launch import LaunchScreen
from tui.widgets.jobs_table import JobsTable
from tui.widgets.output_log import OutputLog

# Slow as a whole: the whole app with real jobs: seconds each.
pytestmark = pytest.mark.slow

SIZE = (160, 48)


async def launch_from_form(pilot: Pilot, name: str, command: str) -> JobModel:
    app: GpuDeckApp = pilot.app  # type: ignore[assignment]
    await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
    await pilot.press("n")
    await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
    app.screen.query_one("#command").value = command
    app.screen.query_one("#name").value = name
    await pilot.press("ctrl+s")
    await until(pilot, lambda: any(j.state == "running" for j in named(app, name)), f"{name} running")
    return named(app, name)[0]


@sync
async def test_launch_watch_points_and_stop(gpudeck_home: Path, script: str) -> None:
    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        job = await launch_from_form(pilot, "tui-watch", script)
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: table.row_count == 1 and table.selected_id == job.id, "the jobs table row")
        await until(pilot, lambda: "loss" in job.series and job.series["loss"].count >= 5, "loss points")

        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        output = app.screen.query_one("#output", OutputLog)
        await until(pilot, lambda: output.line_count >= 3, "the output tail")
        assert '"loss"' in output.lines[-1]
        svg = app.export_screenshot()
        assert "tui-watch" in svg and "step" in svg  # the stats line and the chart's x label

        pid = job.nodes["0"].pid
        assert pid is not None and alive(pid)
        await pilot.press("s")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the armed confirm"
        )
        await pilot.press("y")
        await until(pilot, lambda: job.state == "stopped", "the job stopped")
        assert not alive(pid)
        await until(
            pilot, lambda: any("stopped" in n.message for n in app._notifications), "the ended notice"
        )
        assert app.screen.check_action("stop_job", ()) is None  # nothing left to stop


@sync
async def test_kill_then_restart(gpudeck_home: Path, script: str) -> None:
    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        job = await launch_from_form(pilot, "tui-kill", script)
        pid = job.nodes["0"].pid
        await until(pilot, lambda: app.screen.query_one(JobsTable).selected_id == job.id, "the row selected")
        await pilot.press("K")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the armed confirm"
        )
        await pilot.press("y")
        await until(pilot, lambda: job.state == "killed", "the job killed")
        assert pid is not None and not alive(pid)

        await pilot.press("r")  # an ended job restarts too, after a question (a new job costs money)
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the restart question"
        )
        assert len(named(app, "tui-kill")) == 1
        await pilot.press("y")
        await until(
            pilot,
            lambda: len(named(app, "tui-kill")) == 2 and named(app, "tui-kill")[0].active,
            "the restarted job running",
        )
        again = named(app, "tui-kill")[0]
        assert again.id != job.id
        await until(pilot, lambda: "loss" in again.series, "the new job's points")


@sync
async def test_form_swallows_printable_keys(gpudeck_home: Path, script: str) -> None:
    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.fleet.hosts["local"].up, "local up")
        theme = app.theme
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
        name = app.screen.query_one("#name")
        name.focus()
        await pilot.press(*"qsKrt+-?")
        assert name.value == "qsKrt+-?"
        assert isinstance(app.screen, LaunchScreen) and app.theme == theme and app.is_running
        await pilot.press("ctrl+s")  # "qsKrt+-?" is not a valid name: the form says so and stays
        assert isinstance(app.screen, LaunchScreen)
        assert "--name" in str(app.screen.query_one("#error").render())
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeckScreen), "back on the deck")
        assert not app.fleet.jobs


@sync
async def test_first_run_help_and_disabled_scaling(
    gpudeck_home: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workdir)
    app = GpuDeckApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.fleet.hosts["local"].up, "local up")
        await pilot.press("2")
        assert app.screen.query_one("#first-run").display  # no jobs: how to start one
        assert app.screen.check_action("scale", ("+1",)) is None  # no job: nothing to scale
        assert app.screen.check_action("stop_job", ()) is None
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
        assert app.screen.query_one("#command").value == DEMO_COMMAND
        assert "'-m', 'trainer'" in str(app.screen.query_one("#argv").render())
        await pilot.press("escape")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        keys = {key for key, _, _ in app.screen.rows}
        assert {"n", "s", "K", "r", "l", "enter", "escape", "t", "q", "+", "-", "?"} <= keys
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeckScreen), "back on the deck")
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert {"New job", "Next theme", "Fleet", "Jobs", "Help"} <= set(commands)  # keys are commands too
        await pilot.press("q")
    assert app.return_code == 0
