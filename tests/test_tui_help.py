"""Issue 36 finding 2: `?` was cut to its header widths ("ent", "Rest") and listed `p` twice. Now one
row per key, each place it works in, wrapped to the dialog: snapshots at 80×24 and 220×60.
Update after a deliberate change: `pytest tests/test_tui_help.py --snapshot-update`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.screens.help import HelpScreen

SnapCompare = Callable[..., bool]


async def _help(pilot: Pilot) -> None:
    await pilot.press("question_mark")
    await until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), "the help")
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (220, 60)], ids=["80x24", "220x60"])
def test_help(snap_compare: SnapCompare, gpudeck_home: Path, size: tuple[int, int]) -> None:
    assert snap_compare(GpuDeckApp(hosts=[], store=None), terminal_size=size, run_before=_help)


@sync
async def test_help_has_one_row_per_key_with_every_place(gpudeck_home: Path) -> None:
    app = GpuDeckApp(hosts=[], store=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _help(pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = [key for key, _, _ in help_screen.rows]
        assert len(keys) == len(set(keys))  # `p` once, though the fleet and a job each have one
        rows = {key: (does, where) for key, does, where in help_screen.rows}
        procs_does, procs_where = rows["p"]
        assert "one GPU of the fleet" in procs_does and "the job's processes" in procs_does
        assert procs_where == "fleet tab, jobs tab, job view"
        assert rows["K"][1] == "jobs tab, job view, process view"  # a job view's keys, not only the deck's
        assert "!" in rows and "exclamation_mark" not in keys  # keys as typed, not Textual's names
        # wrapped, never cut: every word of every row is drawn at 80 columns
        table = help_screen.query_one("#keys")
        lines = table.render_lines(Region(0, 0, table.size.width, table.size.height))
        drawn = {word for strip in lines for word in strip.text.split()}
        for key, does, where in help_screen.rows:
            assert {*key.split(), *does.split(), *where.split()} <= drawn, key
