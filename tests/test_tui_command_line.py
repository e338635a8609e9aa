"""`:` — the command line (issue 36, finding 10, k9s's `:pods`): `:jobs`, `:job NAME`, `:logs NAME`,
`:theme NAME`, `:q`, completion from the known names, and bad input said in one line."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Label, TabbedContent

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.fleet import JobModel
from tui.messages import FleetUpdated
from tui.screens.command_line import CommandLineScreen
from tui.screens.command_words import CommandError, find_job, parse
from tui.screens.job import JobScreen
from tui.screens.logs import LogScreen

JOBS = [
    {"id": "20261206-010000-aaaaaa", "name": "resnet", "node": "0", "state": "exited"},
    {"id": "20261206-020000-bbbbbb", "name": "resnet", "node": "0", "state": "running"},
    {"id": "20261206-030000-cccccc", "name": "bert", "node": "0", "state": "running"},
]


def test_words_name_jobs_and_refuse_in_one_line() -> None:
    jobs = [JobModel(id=j["id"], name=j["name"]) for j in JOBS]
    assert find_job(jobs, "resnet").id == "20261206-020000-bbbbbb"  # the newest of that name
    assert find_job(jobs, "cccccc").id == "20261206-030000-cccccc"  # the id's end, as the id column
    assert parse(":theme gpudeck-light", jobs, ["gpudeck-dark", "gpudeck-light"]).arg == "gpudeck-light"
    for line, said in (
        (":pods", ":pods: no such command (known: :fleet, :jobs, :cloud, :job, :logs, :theme, :q)"),
        (":job", ":job takes a job's name or id, e.g. :job resnet"),
        (":job gpt", "'gpt': no such job (a name or id from the jobs tab)"),
        (":job 20261206", "'20261206': 3 jobs' ids match — type more of it"),
        (":theme neon", ":theme neon: no such theme (installed: gpudeck-dark)"),
        (":jobs now", ":jobs takes no argument"),
    ):
        with pytest.raises(CommandError) as err:
            parse(line, jobs, ["gpudeck-dark"])
        assert str(err.value) == said


@pytest.mark.slow
@sync
async def test_colon_jumps_to_a_tab_a_job_its_log_a_theme_and_quits() -> None:
    app = GpuDeckApp(hosts=[], store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        app.fleet.apply_jobs("local", JOBS)
        app.screen.post_message(FleetUpdated({"job"}))
        deck = app.screen

        async def command(*keys: str) -> None:
            await pilot.press("colon")
            await until(pilot, lambda: isinstance(app.screen, CommandLineScreen), "the command line")
            await pilot.press(*keys)

        await command(*"jobs", "enter")
        await until(pilot, lambda: deck.query_one(TabbedContent).active == "jobs", ":jobs")
        await command(*"job be", "tab")  # completed from the known names
        assert app.screen.query_one(Input).value == ":job bert"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), ":job bert")
        assert app.screen.job_id == "20261206-030000-cccccc"
        await command(*"logs resnet", "enter")  # from the job view: back to the deck, then the log
        await until(pilot, lambda: isinstance(app.screen, LogScreen), ":logs resnet")
        assert app.screen.job_id == "20261206-020000-bbbbbb" and len(app.screen_stack) == 3
        await command(*"job nope", "enter")
        await until(
            pilot,
            lambda: "no such job" in str(app.screen.query_one("#command-error", Label).render()),
            "one line",
        )
        assert isinstance(app.screen, CommandLineScreen)  # kept, to be fixed
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, LogScreen), "cancelled")
        await command(*"theme gpudeck-light", "enter")
        await until(pilot, lambda: app.theme == "gpudeck-light", ":theme")
        await command("q", "enter")
        await until(pilot, lambda: not app.is_running, ":q")
