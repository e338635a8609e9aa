"""`O` reverses the jobs' sort (issue 36, finding 10: `o` cycled one way only)."""

from __future__ import annotations

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.messages import FleetUpdated
from tui.widgets.jobs_table import JobsTable

JOBS = [
    {"id": f"20261206-01000{i}-aaaaaa", "name": name, "node": "0", "state": "running"}
    for i, name in enumerate(["bravo", "alpha", "charlie"])
]


@sync
async def test_O_reverses_the_name_sort_and_its_arrow() -> None:
    app = GpuDeckApp(hosts=[], store=None)
    async with app.run_test(size=(160, 30)) as pilot:
        app.fleet.apply_jobs("local", JOBS)
        app.screen.post_message(FleetUpdated({"job"}))
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: len(table.shown_ids) == 3, "the jobs")

        def names() -> list[str]:
            return [app.fleet.jobs[i].name or "" for i in table.shown_ids]

        await pilot.press("o")  # by name
        await until(pilot, lambda: names() == ["alpha", "bravo", "charlie"], "a to z")
        await pilot.press("O")
        await until(pilot, lambda: names() == ["charlie", "bravo", "alpha"], "z to a")
        assert "name ↓" in str(table.columns[next(k for k in table.columns if k.value == "name")].label)
