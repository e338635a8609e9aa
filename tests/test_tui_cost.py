"""The TUI's live cost counters and the client-enforced fleet daily budget, driven with Pilot
against the real `local` agent: a priced host's job costs more every second in the jobs table, the
job view and the header; an unpriced one shows "—"; a daily budget already spent stops the running
job (the `s` key's path) with a notification and a ledger fact; the form's budget reaches spec.json.
Waits poll conditions."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot

from remote_agent.names import new_job_id
from tests.support.tui import named, sync, until
from tui.actions.launch import build_spec
from tui.actions.options import form_options
from tui.app import GpuDeckApp
from tui.cost.ledger import Ledger
from tui.fleet import JobModel
from tui.remote.client import AgentClient
from tui.screens.job import JobScreen
from tui.screens.launch import LaunchScreen
from tui.widgets.jobs_table import JobsTable

SIZE = (160, 48)
PRICED = "[hosts.local]\nprice_per_hour = 3600.0\n"  # $1 a second: cents move visibly


async def launch(pilot: Pilot, name: str, command: str, **fields: str) -> JobModel:
    app: GpuDeckApp = pilot.app  # type: ignore[assignment]
    await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
    await pilot.press("n")
    await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
    app.screen.query_one("#command").value = command
    app.screen.query_one("#name").value = name
    for key, value in fields.items():
        app.screen.query_one(f"#{key}").value = value
    await pilot.press("ctrl+s")
    await until(pilot, lambda: any(j.state == "running" for j in named(app, name)), f"{name} running")
    return named(app, name)[0]


def cell(app: GpuDeckApp, job: JobModel, column: str) -> str:
    return str(app.screen.query_one(JobsTable).get_cell(job.id, column))


def header(app: GpuDeckApp) -> str:
    return str(app.screen.query_one("#summary").render())


def dollars(text: str) -> float:
    return float(text.strip().lstrip("$").replace(",", ""))


@pytest.mark.slow
@sync
async def test_priced_job_cost_moves_live(gpudeck_home: Path, script: str) -> None:
    (gpudeck_home / "hosts.toml").write_text(PRICED)
    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        job = await launch(pilot, "cost-live", script)
        await until(pilot, lambda: cell(app, job, "cost").startswith("$"), "a cost in the jobs table")
        first = dollars(cell(app, job, "cost"))
        await until(pilot, lambda: dollars(cell(app, job, "cost")) >= first + 1.0, "the cost growing")
        assert "burn $3,600.00/h" in header(app)  # the host's whole price: one host, its burn
        cost = app.fleet.costs.jobs[job.id]
        assert (
            cost.burn == pytest.approx(3600.0) and cost.accrued and cost.accrued > 0
        )  # a lone job pays it all

        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        stats = app.screen.query_one("#stats")
        await until(pilot, lambda: "cost so far $" in str(stats.render()), "the job view's cost")
        assert "burn $3,600.00/h" in str(stats.render())
    # While it ran, the app told the ledger it enforced the fleet rules.
    with Ledger(gpudeck_home / "state.db") as ledger:
        assert ledger.rules_paused_since(time.time()) is None
        assert ledger.prices("local")[-1].per_hour == 3600.0


@pytest.mark.slow
@sync
async def test_unknown_price_shows_a_dash(gpudeck_home: Path, script: str) -> None:
    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        job = await launch(pilot, "cost-unknown", script)
        await until(
            pilot,
            lambda: job.id in app.fleet.costs.jobs and "local" in app.fleet.costs.unpriced,
            "a cost report for the job",
        )
        # "—" is also what the cell shows before any report: wait for a redraw of the row that
        # happened after the report (its step cell moves), so the dash is the report's doing.
        shown = cell(app, job, "step")
        await until(pilot, lambda: cell(app, job, "step") != shown, "the job's row redrawn after the report")
        assert cell(app, job, "cost") == "—"
        assert "burn — $/h" in header(app) and "$0" not in header(app)


@pytest.mark.slow
@sync
async def test_daily_budget_stops_running_job(gpudeck_home: Path, script: str, client: AgentClient) -> None:
    (gpudeck_home / "hosts.toml").write_text(PRICED)
    (gpudeck_home / "config.toml").write_text('[cost]\ndaily_budget = 0.01\ntimezone = "UTC"\n')
    spec = build_spec(None, form_options("local", script, name="cost-budget"), new_job_id())
    client.request("launch", timeout=30.0, spec=spec.to_wire())  # running before gpudeck opens
    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            lambda: named(app, "cost-budget") and named(app, "cost-budget")[0].state == "stopped",
            "the job stopped by the fleet budget",
        )
        notes = [n.message for n in app._notifications]
        assert any("daily budget reached" in m and "cost-budget" in m for m in notes), notes
        await until(pilot, lambda: "reached" in header(app), "the header saying the budget is reached")
    with Ledger(gpudeck_home / "state.db") as ledger:
        facts = ledger.facts(kind="fleet_budget_stop")
    assert [(f.job, f.host) for f in facts] == [(spec.id, "local")]
    assert facts[0].data["daily_budget"] == 0.01


@pytest.mark.slow
@sync
async def test_form_budget_reaches_the_spec(
    gpudeck_home: Path, script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an idle stop needs a GPU to watch: the local agent gets one fake NVML GPU
    fakes = str(Path(__file__).parent / "fakes" / "nvml")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([fakes, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([{"uuid": "GPU-aaaa"}]))
    (gpudeck_home / "hosts.toml").write_text(PRICED)
    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
        app.screen.query_one("#command").value = script
        app.screen.query_one("#budget").value = "lots"
        await pilot.press("ctrl+s")  # refused in the form, in one line
        assert isinstance(app.screen, LaunchScreen)
        assert "budget" in str(app.screen.query_one("#error").render())
        await pilot.press("escape")
        job = await launch(pilot, "cost-form", script, budget="50", idle_stop="45m@5%")
    spec = json.loads((gpudeck_home / "local-agent" / "jobs" / job.id / "0" / "spec.json").read_text())
    assert spec["budget"] == 50.0
    assert spec["price"]["per_hour"] == 3600.0 and spec["price"]["currency"] == "USD"
    assert spec["idle_stop"]["minutes"] == 45.0 and spec["idle_stop"]["below_pct"] == 5.0


@sync
async def test_says_since_when_fleet_rules_were_paused(gpudeck_home: Path) -> None:
    (gpudeck_home / "config.toml").write_text("[cost]\ndaily_budget = 25\n")
    before = time.time() - 3600  # the last gpudeck closed an hour ago
    with Ledger(gpudeck_home / "state.db") as ledger:
        ledger.mark_rules_active(before)
        assert ledger.rules_paused_since(time.time()) is not None
    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            lambda: any("fleet rules paused since" in n.message for n in app._notifications),
            "the paused-since notice",
        )
        await until(
            pilot, lambda: "today — / $25.00" in header(app), "the budget in the header"
        )  # no price: unknown
    with Ledger(gpudeck_home / "state.db") as ledger:
        assert ledger.rules_paused_since(time.time()) is None  # enforced again while it ran


@pytest.mark.slow
@sync
async def test_a_hand_edit_while_open_reaches_the_agent_dated_at_the_edit(gpudeck_home: Path) -> None:
    hosts = gpudeck_home / "hosts.toml"
    hosts.write_text(PRICED)
    os.utime(hosts, (time.time() - 7200, time.time() - 7200))
    price_file = gpudeck_home / "local-agent" / "price.json"

    def told() -> list[tuple[float, float | None]]:
        try:
            return [(c["at"], c["per_hour"]) for c in json.loads(price_file.read_text())["changes"]]
        except (OSError, ValueError):
            return []

    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: [p for _, p in told()] == [3600.0], "the agent told the price at start")
        hosts.write_text("[hosts.local]\nprice_per_hour = 7200.0\n")  # edited by hand, the app open
        edited = time.time() - 60  # (as if a minute ago: the date must be the file's, not the read's)
        os.utime(hosts, (edited, edited))
        await until(pilot, lambda: [p for _, p in told()] == [3600.0, 7200.0], "the agent told the new price")
    # Dated at the edit (the local host's clock, within its measured offset), not when the app looked.
    assert told()[-1][0] == pytest.approx(edited, abs=1)
