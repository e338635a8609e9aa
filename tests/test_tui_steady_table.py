"""The jobs table's DataTable (issue #17): a changed cell is the only one drawn again, a focus change
does not draw the table again, and what is on screen always matches the data (also a cell changed
while the table had the other look). Counts cells sent through Rich, not time."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input

from tests.support.tui import sync
from tui.widgets.steady_table import SteadyTable

ROWS, COLUMNS = 20, ("a", "b", "c", "d")


class _Table(App[None]):
    def compose(self) -> ComposeResult:
        yield SteadyTable(id="t", cursor_type="row", zebra_stripes=True)
        yield Input(id="elsewhere")

    def on_mount(self) -> None:
        table = self.query_one(SteadyTable)
        for key in COLUMNS:
            table.add_column(key, key=key, width=6)
        for r in range(ROWS):
            table.add_row(*(f"{key}{r}" for key in COLUMNS), key=f"r{r}")
        table.focus()


def _drawn(app: App[None], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter of cells rendered through Rich (DataTable renders each cell with console.render_lines)."""
    count, depth = [0], [0]
    real = app.console.render_lines

    def render_lines(*args: Any, **kwargs: Any) -> Any:
        count[0] += depth[0] == 0  # a cell's padding renders its content with a nested call
        depth[0] += 1
        try:
            return real(*args, **kwargs)
        finally:
            depth[0] -= 1

    monkeypatch.setattr(app.console, "render_lines", render_lines)
    return count


async def _settle(pilot: Any, table: SteadyTable[str]) -> None:
    """Drawn after the first layout (its resize makes DataTable draw everything once more)."""
    await pilot.pause()
    table.refresh()
    await pilot.pause()


def _line(table: SteadyTable[str], row: int) -> str:
    return "".join(s.text for s in table.render_line(1 + row))  # line 0 is the header


def _cursor_style(table: SteadyTable[str]) -> object:
    return table.render_line(1 + table.cursor_row)._segments[1].style  # past the cell's left padding


@sync
async def test_an_updated_cell_is_the_only_one_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _Table()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(SteadyTable)
        await _settle(pilot, table)
        drawn = _drawn(app, monkeypatch)
        table.update_cell("r5", "b", "new")
        table.update_cell("r7", "d", "x7")
        await pilot.pause()
        assert drawn[0] == 2  # the two cells, not the 84 on screen
        assert "new" in _line(table, 5) and "a5" in _line(table, 5) and "x7" in _line(table, 7)
        assert "b4" in _line(table, 4) and "b6" in _line(table, 6)  # the rows around as they were
        table.update_cell("r5", "b", "newer")  # twice in a frame: drawn once, with the last value
        table.update_cell("r5", "b", "newest")
        await pilot.pause()
        assert drawn[0] == 3 and "newest" in _line(table, 5)


@sync
async def test_a_focus_change_draws_the_cells_of_a_look_once(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _Table()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(SteadyTable)
        await _settle(pilot, table)
        focused = _cursor_style(table)
        drawn = _drawn(app, monkeypatch)
        app.query_one(Input).focus()
        await pilot.pause()
        blurred = _cursor_style(table)
        assert blurred != focused  # the cursor's look follows the focus
        first = drawn[0]
        assert first > 0  # the blurred look drawn once (its cursor and its rows)
        for _ in range(3):
            table.focus()
            await pilot.pause()
            assert _cursor_style(table) == focused
            app.query_one(Input).focus()
            await pilot.pause()
            assert _cursor_style(table) == blurred
        assert drawn[0] == first  # focus, blur, …: both looks kept, nothing drawn again


@sync
async def test_a_cell_changed_under_one_look_shows_in_the_other() -> None:
    app = _Table()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(SteadyTable)
        await _settle(pilot, table)
        app.query_one(Input).focus()
        await pilot.pause()
        table.update_cell("r3", "c", "late")  # while blurred
        await pilot.pause()
        table.focus()
        await pilot.pause()
        assert "late" in _line(table, 3)
        table.update_cell("r3", "c", "later")  # while focused, then blurred again
        await pilot.pause()
        app.query_one(Input).focus()
        await pilot.pause()
        assert "later" in _line(table, 3) and "c3" not in _line(table, 3)


@sync
async def test_shown_again_at_the_same_width_nothing_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _Table()
    async with app.run_test(size=(60, 30)) as pilot:
        table = app.query_one(SteadyTable)
        app.query_one(Input).focus()  # hiding the table would move its focus: another look, drawn once
        await _settle(pilot, table)
        drawn = _drawn(app, monkeypatch)
        for _ in range(3):  # as the jobs tab hidden and shown: a Resize each time it is shown
            table.display = False
            await pilot.pause()
            table.display = True
            await pilot.pause()
        await pilot.resize_terminal(60, 40)  # taller only
        await pilot.pause()
        assert drawn[0] == 0 and "b5" in _line(table, 5)
