"""The full log's anchor keys (issue 36, finding 10): a long line was cut at the edge — `→` scrolls
sideways and `w` wraps it; `c` copies the current line (OSC 52, App.copy_to_clipboard), `v` marks a
line and `c` then copies the lines between; in the job view `c` copies the last line in view."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.tui import select_job, sync, until
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient
from tui.screens.job import JobScreen
from tui.screens.logs import LogScreen
from tui.widgets.log_rows import rows
from tui.widgets.virtual_log import VirtualLog

LONG = "x" * 150 + "THE-END"
PRINTED = f"for i in range(40): print(f'row {{i}}')\nprint({LONG!r})\nprint('last')"


def test_rows_cut_shift_and_wrap() -> None:
    lines = ["short", "abcdefghij"]
    assert rows(0, 2, 5, 4, lines.__getitem__, wrap=False) == [(0, "shor", True), (1, "abcd", True)]
    assert [r.text for r in rows(0, 2, 5, 4, lines.__getitem__, wrap=False, x=4)] == ["t", "efgh"]
    wrapped = rows(0, 2, 5, 4, lines.__getitem__, wrap=True)
    assert [(r.line, r.text, r.first) for r in wrapped] == [
        (0, "shor", True),
        (0, "t", False),
        (1, "abcd", True),
        (1, "efgh", False),
        (1, "ij", False),
    ]
    # following, wrapped: the last line whole at the bottom, the view filled from the end
    assert [r.text for r in rows(0, 2, 3, 4, lines.__getitem__, wrap=True, from_end=True)] == [
        "abcd",
        "efgh",
        "ij",
    ]


def screen_text(app: GpuDeckApp) -> str:
    return app.export_screenshot().replace("&#160;", " ")


@pytest.mark.slow
@sync
async def test_scroll_wrap_and_copy_in_the_full_log(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job = launch(client, workdir, [sys.executable, "-c", PRINTED], name="long")
    wait_state(client, job["id"], {"exited"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(100, 20)) as pilot:
        await select_job(pilot, app, job["id"])
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        await until(pilot, lambda: "last" in screen_text(app), "the output tail")
        await pilot.press("c")  # the job view: the last line in view
        await until(pilot, lambda: app.clipboard == "last", "the job view's copy")

        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, LogScreen), "the full log")
        log = app.screen.query_one(VirtualLog)
        await until(pilot, lambda: log.ready and log.text_of(41) == "last", "the lines")
        await until(pilot, lambda: "xxxx" in screen_text(app), "drawn")
        assert "THE-END" not in screen_text(app)  # cut at the edge
        await pilot.press(*["right"] * 10)
        await until(pilot, lambda: "THE-END" in screen_text(app), "scrolled sideways to the end")
        await pilot.press("home", "w")
        await until(pilot, lambda: "wrapped" in str(app.screen.query_one("#log-title").render()), "wrapped")
        await until(pilot, lambda: "THE-END" in screen_text(app) and log.x == 0, "the whole line, wrapped")

        await pilot.press("c")  # the current line: the last in view, following
        await until(pilot, lambda: app.clipboard == "last", "the last line copied")
        await pilot.press("v", "k", "k")  # mark, then two lines up
        await until(pilot, lambda: log.selection() == (39, 41), "the selection")
        await pilot.press("c")
        await until(pilot, lambda: app.clipboard == f"row 39\n{LONG}\nlast", "three lines copied")
        assert log.mark is None
