"""Issue 31: the TUI's jobs tab shows the jobs waiting in this machine's queue (`run --queue`), first,
in the order they will start, with how many wait ahead and why; `s` on one takes it out of the
queue (asked first); a job the controller started is its host's row, never two rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.content import Content

from remote_agent.spec import GpuRequest
from tests.support.tui import sync, until
from tui.actions.options import LaunchOptions
from tui.app import GpuDeckApp
from tui.fleet import JobModel
from tui.queue.entries import Queue
from tui.screens.confirm import ConfirmScreen
from tui.widgets.jobs_table import JobsTable

FIRST, SECOND = "20261206-050000-aaaaaa", "20261206-050001-bbbbbb"


def _opts(name: str) -> LaunchOptions:
    return LaunchOptions(
        argv=("python", "t.py"), host="local", pool=("local",), gpus=GpuRequest(1), name=name
    )


def _cell(table: JobsTable, key: str, column: str) -> str:
    value = table.get_cell(key, column)
    return value.plain if isinstance(value, Content) else str(value)


@pytest.mark.slow
@sync
async def test_queued_jobs_are_rows_first_and_s_takes_one_out(gpudeck_home: Path) -> None:
    queue = Queue()
    queue.add(FIRST, _opts("[b]first[/b]"))  # user text: shown as typed, never markup
    queue.add(SECOND, _opts("second"))
    app = GpuDeckApp(hosts=["local"], store=None)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        await until(
            pilot, lambda: table.shown_ids[:2] == [f"queued:{FIRST}", f"queued:{SECOND}"], "the queue"
        )
        assert _cell(table, f"queued:{FIRST}", "name") == "[b]first[/b]"
        assert _cell(table, f"queued:{FIRST}", "state") == "queued"
        assert _cell(table, f"queued:{FIRST}", "hosts") == "local"
        assert _cell(table, f"queued:{SECOND}", "info").startswith("1 ahead; ")
        assert not app.screen.query_one("#first-run").display  # a queued job is no empty home

        table.move_cursor(row=1, animate=False)
        await until(pilot, lambda: table.selected_queued == SECOND, "the second queued row")
        assert app.screen.current_job() is None  # not a job: enter opens nothing
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        app.screen._arm()  # the guard's timer, early
        await pilot.press("y")
        await until(pilot, lambda: f"queued:{SECOND}" not in table.shown_ids, "the row gone")
        assert [e.id for e in Queue().entries()] == [FIRST]  # out of the queue itself
        assert f"queued:{FIRST}" in table.shown_ids


def test_a_job_a_host_lists_is_not_also_a_queued_row() -> None:
    from tui.fleet import Fleet

    fleet = Fleet()
    entry = {"id": FIRST, "name": "first", "state": "starting", "pool": ["local"], "ahead": 0, "why": ""}
    assert fleet.set_queued([entry]) and fleet.queued == [entry]
    assert not fleet.set_queued([dict(entry)])  # the same queue read again: nothing to draw
    fleet.jobs[FIRST] = JobModel(id=FIRST)  # the controller started it between two reads
    assert fleet.set_queued([entry]) and fleet.queued == []
