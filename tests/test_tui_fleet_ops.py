"""Issue #17, a TUI that carries a fleet: exact modal focus, ended jobs hidden on `a`, ids where names
clash, read-only mode, the palette, threshold colours and the loss chart's log scale."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.command import CommandList
from textual.content import Content

from tests.support.jobs import launch, wait_state
from tests.support.tui import open_a_job, select_a_job, sync, until
from tui.app import GpuDeckApp
from tui.fleet import Fleet
from tui.remote.client import AgentClient
from tui.screens.confirm import ConfirmScreen
from tui.screens.deck import DeckScreen
from tui.screens.job import JobScreen
from tui.themes import BUILTIN_DIR, VARIABLE_DEFAULTS, load_themes
from tui.widgets.charts import LossChart
from tui.widgets.host_panel import render_host
from tui.widgets.jobs_table import JobsTable
from tui.widgets.summary import FleetSummaryBar

SLEEP = "import time; time.sleep(600)"


@pytest.mark.slow
@sync
async def test_a_confirm_refuses_yes_until_armed(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ConfirmScreen, "ARM_DELAY", 60.0)  # longer than any stall between push and key
    app = GpuDeckApp(hosts=["local"], store=None)
    answers: list[bool | None] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.push_screen(ConfirmScreen("Stop it?", "", "Stop"), answers.append)
        await pilot.press("y")  # typed for something else, the moment it appears
        assert isinstance(app.screen, ConfirmScreen) and answers == []
        assert app.screen.focused is not None and app.screen.focused.id == "no"  # enter would cancel
        await pilot.pause()
        assert not app.screen.armed and answers == []
        app.screen._arm()  # the timer's own callback, early: the test need not wait a minute
        await until(pilot, lambda: app.screen.armed, "the dialog armed")
        await pilot.press("y")
        await until(pilot, lambda: answers == [True], "the answer")
        assert isinstance(app.screen, DeckScreen)

        app.push_screen(ConfirmScreen("Stop it?", "", "Stop"), answers.append)
        await pilot.press("n")  # no is never delayed
        await until(pilot, lambda: answers == [True, False], "the refusal")


@pytest.mark.slow
@sync
async def test_s_then_y_at_once_does_not_stop_a_job(
    gpudeck_home: Path, client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ConfirmScreen, "ARM_DELAY", 60.0)  # a loaded machine cannot arm it before the y
    job_id = launch(client, workdir, [sys.executable, "-c", SLEEP], name="keeper")["id"]
    wait_state(client, job_id, {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: job_id in app.fleet.jobs and app.fleet.jobs[job_id].active, "the job")
        await select_a_job(pilot, app)
        await pilot.press("s", "y")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")
        await pilot.pause(0.3)
        assert app.fleet.jobs[job_id].active
    client.request("kill", job=job_id, node="0")


@pytest.mark.slow
@sync
async def test_a_hides_ended_jobs_and_an_id_column_tells_same_names_apart(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    ended = [launch(client, workdir, [sys.executable, "-c", "pass"], name="twin")["id"] for _ in range(2)]
    for job_id in ended:
        wait_state(client, job_id, {"exited"})
    live = launch(client, workdir, [sys.executable, "-c", SLEEP], name="twin")["id"]
    wait_state(client, live, {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: len(app.fleet.jobs) == 3, "the jobs")
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: table.row_count == 3, "all three, ended ones too")
        assert [str(c.label) for c in table.columns.values()][:2] == ["name", "id"]
        assert str(table.get_cell(live, "id")) == live[-6:]

        await pilot.press("a")
        await until(pilot, lambda: table.shown_ids == [live], "the ended jobs hidden")
        assert "id" not in [str(c.label) for c in table.columns.values()]  # one twin left: no clash
        assert table.selected_id == live
        await pilot.press("a")
        await until(pilot, lambda: table.row_count == 3, "the ended jobs back")
        assert table.shown_ids[0] == live  # newest (and running) first
        assert "id" in [str(c.label) for c in table.columns.values()]
    client.request("kill", job=live, node="0")


def _notes(app: GpuDeckApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.mark.slow
@sync
async def test_read_only_refuses_every_action_with_one_line(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job_id = launch(client, workdir, [sys.executable, "-c", SLEEP], name="watched")["id"]
    wait_state(client, job_id, {"running"})
    (gpudeck_home / "config.toml").write_text("[ui]\nread_only = true\n")
    app = GpuDeckApp(store=None)  # read-only from config.toml (gpudeck --read-only passes read_only=True)
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: job_id in app.fleet.jobs and app.fleet.jobs[job_id].active, "the job")
        assert "READ-ONLY" in str(app.screen.query_one(FleetSummaryBar).render())
        await select_a_job(pilot, app)
        for key, what in (("s", "stop"), ("K", "kill"), ("r", "restart"), ("n", "new job")):
            await pilot.press(key)
            await until(pilot, lambda w=what: any(f"read-only: {w} refused" in n for n in _notes(app)), what)
            assert isinstance(app.screen, DeckScreen)  # no dialog, no form
        app.screen.action_scale("+1")  # refused even when run directly
        await until(pilot, lambda: any("read-only: scale refused" in n for n in _notes(app)), "scale")
        app.job_control.end(app.fleet.jobs[job_id], "kill")  # the service refuses too, whoever calls
        await pilot.pause(0.3)
        assert app.fleet.jobs[job_id].active and isinstance(app.screen, DeckScreen)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "watching still works")
        await pilot.press("s")
        await until(
            pilot, lambda: sum("stop refused" in n for n in _notes(app)) == 2, "refused in the job view"
        )
    client.request("kill", job=job_id, node="0")


@pytest.mark.slow
@sync
async def test_the_palette_lists_gpudecks_actions_once_with_keys_as_typed(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job_id = launch(client, workdir, [sys.executable, "-c", SLEEP], name="palette")["id"]
    wait_state(client, job_id, {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: job_id in app.fleet.jobs and app.fleet.jobs[job_id].active, "the job")
        await select_a_job(pilot, app)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert len(titles) == len(set(titles))  # no "Copy selected text" twice, no Quit twice
        assert not {
            "Cursor up",
            "Cursor down",
            "Page up",
            "Down",
            "Up",
            "First",
            "Last",
            "Focus Next",
            "Copy selected text",
            "Keys",
            "Maximize",
        } & set(titles)
        assert {
            "Stop",
            "Kill",
            "Restart",
            "Log",
            "Procs",
            "New job",
            "Filter",
            "Sort",
            "Ended",
            "Help",
        } <= set(titles)
        assert commands["Help"] == "key: ?" and commands["Stop"].startswith("s · ")
        assert not [h for h in commands.values() if "question_mark" in h or "slash" in h]

        await pilot.press("ctrl+p")  # the palette itself runs one: Procs
        await pilot.press(*"Procs")
        await until(
            pilot,
            lambda: any("Procs" in str(o.prompt) for o in app.screen.query_one(CommandList).options),
            "the match",
        )
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "ProcessesScreen", "the processes view")
    client.request("kill", job=job_id, node="0")


def _styled(content: Content, style: str) -> list[str]:
    return [content.plain[s.start : s.end] for s in content.spans if style in str(s.style)]


def test_hot_gpus_and_power_over_the_limit_take_theme_colours() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    fleet.apply_gpus(
        "box",
        {
            "available": True,
            "gpus": [
                {"index": 0, "name": "A100", "util": 90, "temp_c": 85, "power_w": 420, "power_limit_w": 400},
                {"index": 1, "name": "A100", "util": 90, "temp_c": 84, "power_w": 400, "power_limit_w": 400},
                {
                    "index": 2,
                    "name": "A100",
                    "util": 90,
                    "temp_c": None,
                    "power_w": 100,
                    "power_limit_w": None,
                },
            ],
        },
    )
    fleet.set_host_status("box", "connected")
    text = render_host(fleet.hosts["box"], fleet, 1000.0, 120)
    assert _styled(text, "$gpu-hot") == ["85°C"]  # 84 °C is not hot yet
    assert _styled(text, "$power-over") == ["420/400W"]  # at the limit is not over it
    assert "100/—W" in text.plain
    for theme in load_themes([BUILTIN_DIR]).themes:
        assert {"gpu-hot", "power-over"} <= set(theme.variables), theme.name
    assert {"gpu-hot", "power-over"} <= set(VARIABLE_DEFAULTS)


def _drawn(chart: LossChart) -> str:
    rendered = chart.render()  # drawn again and again (plotext's own log scale broke on the second)
    return getattr(rendered, "plain", str(rendered))


LOSSES = "import json\nfor i, v in enumerate([2.0, 0.5, 0.0, -0.25, 0.05, 0.01], 1): print(json.dumps({'step': i, 'loss': v}))"


@pytest.mark.slow
@sync
async def test_L_draws_the_loss_on_a_log_scale_leaving_out_values_at_or_below_zero(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job_id = launch(client, workdir, [sys.executable, "-c", LOSSES], name="logloss")["id"]
    wait_state(client, job_id, {"exited"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: job_id in app.fleet.jobs, "the job")
        await open_a_job(pilot, app)
        job = app.fleet.jobs[job_id]
        await until(pilot, lambda: "loss" in job.series and job.series["loss"].count == 6, "the six points")
        chart = app.screen.query_one(LossChart)
        await pilot.press("L")
        await until(pilot, lambda: "2 points <= 0 not drawn" in _drawn(chart), "the log chart")
        assert chart.log_scale and "loss (log)" in _drawn(chart) and "0.01" in _drawn(chart)
        await pilot.press("L")
        await until(pilot, lambda: "(log)" not in _drawn(chart), "linear again")
        assert not chart.log_scale and isinstance(app.screen, JobScreen)
