"""User text is never markup: a command typed with `=` and `[bold]` in the form, and a job whose
failure cause holds `[red]`, reach the screen literally and the app stays up."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.widgets._toast import Toast

from tests.support.tui import named, sync, until
from tui.actions.options import LaunchOptions
from tui.app import GpuDeckApp
from tui.remote.replay import Recording
from tui.screens.launch import LaunchScreen
from tui.widgets.jobs_table import JobsTable
from tui.widgets.summary import FleetSummaryBar

SIZE = (160, 48)


@pytest.mark.slow
@sync
async def test_typed_equals_and_brackets_in_the_command_launch(gpudeck_home: Path, script: str) -> None:
    app = GpuDeckApp(store=None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:  # toasts drawn: markup parsed
        await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
        app.screen.query_one("#command").value = script
        await pilot.press("end", *" --lr=3e-4 [bold]x[/]")  # each key redraws the argv preview
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, LaunchScreen)
        argv = str(app.screen.query_one("#argv").render())
        assert "'--lr=3e-4', '[bold]x[/]'" in argv
        await pilot.press("ctrl+s")
        await until(
            pilot, lambda: any(j.state == "running" for j in app.fleet.jobs.values()), "the job running"
        )
        await pilot.pause()
        assert app.is_running


@pytest.mark.slow  # the everyday subset stays under a minute serially
@sync
async def test_a_cause_with_markup_is_shown_literally(gpudeck_home: Path, workdir: Path) -> None:
    app = GpuDeckApp(store=None)
    cause = "ValueError: [red]lr=3e-4[/nope]"
    code = "raise ValueError('[red]lr=3e-4[/nope]')"
    async with app.run_test(size=SIZE, notifications=True) as pilot:  # toasts drawn: markup parsed
        await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
        app.job_control.launch(
            LaunchOptions(argv=(sys.executable, "-c", code), name="bad-lr", workdir=str(workdir)),
            "20261201-000000-bad001",
        )
        await until(pilot, lambda: any(j.state == "failed" for j in named(app, "bad-lr")), "the job failed")
        await until(
            pilot, lambda: any(cause in str(n.message) for n in app._notifications), "the ended notice"
        )
        await until(
            pilot, lambda: any(cause in t.render().plain for t in app.screen.query(Toast)), "the toast"
        )
        await pilot.press("2")  # the jobs table shows the cause too
        await until(pilot, lambda: app.screen.query_one(JobsTable).row_count == 1, "the row")
        assert app.is_running
        assert cause.replace(" ", "&#160;") in app.export_screenshot()


@pytest.mark.slow  # the everyday subset stays under a minute serially
@sync
async def test_a_replay_says_replay_in_the_header(gpudeck_home: Path) -> None:
    recording = Recording.load(Path(__file__).parent / "data" / "recordings" / "session.jsonl")
    app = GpuDeckApp(
        hosts=recording.hosts,
        transport=lambda host: recording.transport(host, speed=0),
        store=None,
        replay="[bold]demo.jsonl",
    )
    async with app.run_test(size=(120, 30)) as pilot:
        summary = app.screen.query_one(FleetSummaryBar)
        await until(pilot, lambda: any(j for j in app.fleet.jobs.values()), "the recorded jobs")
        text = summary.render()
        assert str(text).startswith(" REPLAY  [bold]demo.jsonl   gpudeck")  # the file name is not markup
    live = GpuDeckApp(hosts=[], store=None)
    async with live.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert "REPLAY" not in str(live.screen.query_one(FleetSummaryBar).render())
