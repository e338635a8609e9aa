"""The keys users expect, on the real app and real jobs: `/` filters the jobs table, `o` cycles its
sort, j/k/g/G move in tables and logs, `/` `n` `N` search the full log whose title says whether it
follows, a missing local workdir is refused in the form (nothing typed is lost), and an 80×24
footer keeps q, ? and t (and ⏎ Open on the jobs tab)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.widgets import DataTable
from textual.widgets._footer import FooterKey

from tests.support.jobs import launch, wait_state
from tests.support.tui import sync, until
from tui.app import GpuDeckApp, binding_ids
from tui.remote.client import AgentClient
from tui.screens.deck import DeckScreen
from tui.screens.job import JobScreen
from tui.screens.launch import LaunchScreen
from tui.screens.logs import LogScreen
from tui.widgets.jobs_table import JobsTable
from tui.widgets.output_log import OutputLog
from tui.widgets.virtual_log import VirtualLog

LINES = "for i in range(300): print('needle' if i in (40, 200) else f'line {i}')"


def quick_jobs(client: AgentClient, workdir: Path, names: list[str]) -> list[str]:
    ids = [launch(client, workdir, [sys.executable, "-c", LINES], name=n)["id"] for n in names]
    for job_id in ids:
        wait_state(client, job_id, {"exited"})
    return ids


async def jobs_tab(pilot, app: GpuDeckApp, rows: int) -> JobsTable:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: len(app.fleet.jobs) == rows, "the jobs")
    await pilot.press("2")
    table = app.screen.query_one(JobsTable)
    await until(pilot, lambda: table.row_count == rows, "the rows")
    return table


def footer_keys(app: GpuDeckApp, width: int) -> set[str]:
    """The keys the Footer shows whole inside the terminal's width."""
    return {k.key for k in app.screen.query(FooterKey) if k.region.width and k.region.right <= width}


def test_new_keys_have_ids_users_can_remap() -> None:
    assert {
        "filter_jobs",
        "sort_jobs",
        "clear_filter",
        "vim_down",
        "vim_up",
        "vim_top",
        "vim_bottom",
        "log_search",
        "search_next",
        "search_prev",
        "open_job",
        "job_procs",
        "procs_close",
    } <= binding_ids()


def test_every_binding_id_is_documented() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "keys.md").read_text()
    assert not [i for i in sorted(binding_ids()) if f"`{i}`" not in doc]


def test_the_jobs_tables_sort_order_leaves_datatable_sort_alone() -> None:
    """`o`'s order is the reactive `sort_by`: one named `sort` hid DataTable.sort() (found by mypy)."""
    assert JobsTable.sort is DataTable.sort


@pytest.mark.slow
@sync
async def test_filter_sort_and_vim_keys_in_the_jobs_table(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    quick_jobs(client, workdir, ["bravo", "alpha", "charlie"])
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(80, 24)) as pilot:
        table = await jobs_tab(pilot, app, 3)
        assert {"q", "question_mark", "t", "enter"} <= footer_keys(app, 80)
        by_id = {j.id: j.name for j in app.fleet.jobs.values()}

        await pilot.press("o")  # default → name
        await until(
            pilot, lambda: [by_id[i] for i in table.shown_ids] == ["alpha", "bravo", "charlie"], "by name"
        )
        await pilot.press("G")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("j")
        assert by_id[table.selected_id or ""] == "bravo"

        await pilot.press("slash", *"ARL")  # case-insensitive substring of a name
        await until(pilot, lambda: [by_id[i] for i in table.shown_ids] == ["charlie"], "filtered")
        await pilot.press("enter")  # keep the filter, back to the table
        assert table.has_focus and table.row_count == 1
        await pilot.press("escape")
        await until(pilot, lambda: table.row_count == 3, "the filter cleared")
        await pilot.press("slash", *"exited")  # states match too
        await until(pilot, lambda: table.row_count == 3, "by state")
        await pilot.press("escape")
        assert isinstance(app.screen, DeckScreen) and app.is_running


@pytest.mark.slow
@sync
async def test_full_log_search_and_follow_title(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    quick_jobs(client, workdir, ["haystack"])
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await jobs_tab(pilot, app, 1)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, LogScreen), "the full log")
        screen = app.screen
        log = screen.query_one(VirtualLog)
        await until(
            pilot, lambda: log.total == 300 and log.text_of(299) == "line 299", "the output, to its last line"
        )

        def title() -> str:
            return str(screen.query_one("#log-title").render())

        # the job has ended: the title says so, and whether the log sits at its end
        assert "haystack" in title() and "ended (exited)" in title() and "not following" not in title()
        await pilot.press("f")
        await until(pilot, lambda: "not following" in title(), "the title says follow is off")
        await pilot.press("f")
        await until(pilot, lambda: "not following" not in title(), "following again")

        await pilot.press("g")  # the top: reading back stops following
        await until(pilot, lambda: "not following" in title(), "g stops following")
        await pilot.press("slash", *"needle", "enter")
        await until(pilot, lambda: "/needle: line 41" in title(), "the first match")
        assert int(log.scroll_y) <= 40 < int(log.scroll_y) + log.scrollable_content_region.height
        await pilot.press("n")
        await until(pilot, lambda: "/needle: line 201" in title(), "the next match")
        await pilot.press("n")  # wraps around
        await until(pilot, lambda: "/needle: line 41" in title(), "wrapped to the first")
        await pilot.press("N")
        await until(pilot, lambda: "/needle: line 201" in title(), "the previous match")
        await pilot.press("slash", *"no such text", "enter")
        await until(pilot, lambda: "/no such text: no match" in title(), "no match said")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeckScreen), "back on the deck")
        await pilot.press("enter")  # the job view's output tail says it too, on its border
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        tail = app.screen.query_one("#output", OutputLog)
        assert not tail.border_title
        await pilot.press("f")
        await until(pilot, lambda: tail.border_title == "not following (f follows)", "the border says so")


@pytest.mark.slow
@sync
async def test_a_missing_local_workdir_is_refused_in_the_form(
    gpudeck_home: Path, script: str, workdir: Path
) -> None:
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
        form = app.screen
        form.query_one("#command").value = script
        form.query_one("#name").value = "wd-check"
        form.query_one("#workdir").value = str(workdir / "nope")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "no such directory" in str(form.query_one("#error").render()), "refused")
        assert app.screen is form and form.query_one("#command").value == script
        assert form.query_one("#name").value == "wd-check" and form.query_one("#workdir").has_focus
        assert not app.fleet.jobs
        form.query_one("#workdir").value = str(workdir)
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: any(j.name == "wd-check" and j.active for j in app.fleet.jobs.values()),
            "launched once the workdir exists",
        )
