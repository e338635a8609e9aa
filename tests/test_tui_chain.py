"""A restart-mode resize chain shown as one job (issue 14, "one job through resizes"): the job
view follows its job to the new id a resize makes, and its loss chart draws the ancestor's points
before the resized job's own, cut where the resized job resumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.resuming import RESUMING
from tests.support.tui import sync, until
from tests.test_tui_scale import cli, run_two_nodes, until_two_nodes_run
from tui.app import GpuDeckApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.job import JobScreen
from tui.widgets.charts import LossChart
from tui.widgets.jobs_table import JobsTable


@pytest.mark.slow
@sync
async def test_the_job_view_follows_its_job_through_a_resize(gpudeck_home: Path, workdir: Path) -> None:
    job_id = run_two_nodes("follow", RESUMING, workdir)
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_two_nodes_run(pilot, app, job_id)
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: table.selected_id == job_id, "the row")
        table.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        await pilot.press("minus")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the question, armed"
        )
        await pilot.press("y")
        await until(
            pilot,
            lambda: isinstance(app.screen, JobScreen) and app.screen.job_id != job_id,
            "the view on the resized job",
            timeout=60,
        )
        view = app.screen
        assert isinstance(view, JobScreen)
        new = app.fleet.jobs[view.job_id]
        assert new.name == "follow" and new.resized_from is not None and new.resized_from.job == job_id
        assert [a.id for a in view.chain()] == [job_id]
        chart = view.query_one(LossChart)
        # the ancestor's steps 1-3, then the resized job's own 4-8: steps 4-5 were trained again after the resume
        await until(
            pilot,
            lambda: (
                "loss" in new.series
                and chart.chained(new, view.chain(), "loss") == [(float(i), 10.0 - i) for i in range(1, 9)]
            ),
            "one continuous loss series",
        )
        await pilot.press("escape")  # one view replaced, not stacked: back is the deck
        await until(pilot, lambda: not isinstance(app.screen, JobScreen), "the deck")
        # the stopped ancestor folds into the resized job's row; `a`: ended hidden, then everything
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: table.shown_ids == [new.id], "one row for the chain")
        assert str(table.get_cell(new.id, "name")) == "follow ↻1"
        await pilot.press("a")
        await until(pilot, lambda: table.shown_ids == [new.id], "the ended jobs hidden")
        await pilot.press("a")
        await until(pilot, lambda: table.shown_ids == [new.id, job_id], "the chain unfolded")
        assert str(table.get_cell(new.id, "name")) == "follow"
        await pilot.press("a")
        await until(pilot, lambda: table.shown_ids == [new.id], "folded again")
    # A fresh app knows the ended ancestor as a summary only: opening the resized job asks the
    # agent for the ancestor's series too.
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: new.id in app.fleet.jobs and job_id in app.fleet.jobs, "both jobs")
        assert not app.fleet.jobs[job_id].has_history
        app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, new.id))
        await until(
            pilot, lambda: isinstance(app.screen, JobScreen) and app.screen.query(LossChart), "the job view"
        )
        view, fresh = app.screen, app.fleet.jobs[new.id]
        chart = view.query_one(LossChart)
        await until(
            pilot,
            lambda: (
                "loss" in fresh.series
                and chart.chained(fresh, view.chain(), "loss") == [(float(i), 10.0 - i) for i in range(1, 9)]
            ),
            "the ancestor's series loaded",
        )
    cli("kill", new.id, cwd=workdir)
