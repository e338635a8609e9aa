"""The deck under a fleet draws only what changed and is in sight (issue #17): host panels keyed by
their data, ended jobs' rows not recomputed, the GPU → job lookup an index, colours that change
with the same text still drawn. Widgets run in a small real Textual app fed a real Fleet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult

from tests.support.spying import record_calls
from tests.support.tui import sync, until
from tui.fleet import Fleet
from tui.fleet.costs import CostBoard, JobCostShown
from tui.messages import FleetChanged
from tui.screens.deck import DeckScreen
from tui.screens.job import JobScreen
from tui.widgets import jobs_table
from tui.widgets.fleet_view import FleetView
from tui.widgets.host_panel import HostPanel
from tui.widgets.jobs_table import JobsTable

NOW = 1_795_000_000.0


def _gpus(util: int, n: int = 8, uuid: str = "GPU-{h}-{g}", host: str = "h") -> dict[str, Any]:
    return {
        "available": True,
        "gpus": [
            {
                "index": g,
                "uuid": uuid.format(h=host, g=g),
                "name": "NVIDIA H100",
                "util": util,
                "mem_used_mib": 1000,
                "mem_total_mib": 81920,
                "temp_c": 40,
                "power_w": 100.0,
                "power_limit_w": 700.0,
            }
            for g in range(n)
        ],
    }


def _fleet(hosts: int, now: float = NOW) -> Fleet:
    fleet = Fleet(clock=lambda: now)
    for h in range(hosts):
        name = f"h{h:02d}"
        fleet.set_host_status(name, "connected", t=now)
        fleet.apply_gpus(name, _gpus(50, host=name), t=now)
    return fleet


class _Views(App[None]):
    def __init__(self, widget: Any) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def _job(jid: str, state: str, name: str) -> dict[str, Any]:
    ended = state != "running"
    return {
        "id": jid,
        "node": "0",
        "state": state,
        "name": name,
        "started_at": NOW - 100,
        "ended_at": NOW - 10 if ended else None,
        "exit_code": 0 if ended else None,
        "last": {"step": 10, "loss": 0.5},
        "last_seq": 0,
    }


# -- the model ----------------------------------------------------------------------------------


def test_gpu_to_job_index_follows_jobs_starting_ending_and_moving() -> None:
    fleet = Fleet(clock=lambda: NOW)
    gpu = {"uuid": "GPU-1", "index": 0, "util": 90}
    fleet.apply_events(
        "a",
        "job-1",
        "0",
        [
            {"seq": 1, "t": NOW, "kind": "state", "state": "running"},
            {"seq": 2, "t": NOW, "kind": "gpu", "gpus": [gpu]},
        ],
    )
    first = fleet.jobs["job-1"]
    assert fleet.job_for_gpu("a", "GPU-1") is first and fleet.job_for_gpu("b", "GPU-1") is None
    # the GPU shows up on another host (a reinstalled box keeps its uuid): the index follows
    fleet.apply_events("b", "job-1", "0", [{"seq": 3, "t": NOW, "kind": "gpu", "gpus": [gpu]}])
    assert fleet.job_for_gpu("b", "GPU-1") is first and fleet.job_for_gpu("a", "GPU-1") is None
    # it ends: nobody's GPU any more; the next job on it takes it
    fleet.apply_events(
        "b", "job-1", "0", [{"seq": 4, "t": NOW, "kind": "state", "state": "exited", "exit_code": 0}]
    )
    assert fleet.job_for_gpu("b", "GPU-1") is None
    fleet.apply_events(
        "b",
        "job-2",
        "0",
        [
            {"seq": 1, "t": NOW, "kind": "state", "state": "running"},
            {"seq": 2, "t": NOW, "kind": "gpu", "gpus": [gpu]},
        ],
    )
    assert fleet.job_for_gpu("b", "GPU-1") is fleet.jobs["job-2"]
    # a poll's job object that ends it ends its claim too
    fleet.apply_jobs("b", [{**_job("job-2", "stopped", "two"), "last_seq": 3}])
    assert fleet.job_for_gpu("b", "GPU-1") is None


def test_versions_move_with_what_a_job_or_host_shows_and_only_then() -> None:
    fleet = _fleet(1)
    host = fleet.hosts["h00"]
    v = host.version
    fleet.apply_gpus("h00", _gpus(51, host="h00"), t=NOW + 1)
    assert host.version > v
    fleet.apply_jobs("h00", [_job("old", "exited", "old")])
    job = fleet.jobs["old"]
    v = job.version
    fleet.apply_jobs("h00", [_job("old", "exited", "old")])  # the same object polled again
    assert job.version == v
    fleet.apply_jobs("h00", [_job("old", "exited", "renamed")])
    assert job.version > v


# -- the fleet view ---------------------------------------------------------------------------------


@pytest.mark.slow
@sync
async def test_host_panels_redraw_only_on_change_and_only_in_sight() -> None:
    now = NOW
    fleet = _fleet(8, now)  # 8 hosts × 17 lines: most of them below a 24-line window
    view = FleetView()
    view.clock = lambda: now + 1  # the catch-up after a scroll: not the real clock of a loaded machine
    app = _Views(view)
    updates: dict[str, int] = {}
    async with app.run_test(size=(120, 24)) as pilot:
        view.show(fleet, now)
        await until(pilot, lambda: len(view.query(HostPanel)) == 8, "the panels")
        await pilot.pause()
        view.show(fleet, now)  # their real width, once laid out
        await pilot.pause()
        # those below the window too (drawn first at a provisional 80 columns): a GPU is 2 lines at
        # 118, so each panel is as tall as the others, and a scroll to the end reaches the last one
        assert {p.outer_size.height for p in view.query(HostPanel)} == {17}
        panels = {p.host_name: p for p in view.query(HostPanel)}
        for name, panel in panels.items():
            real = panel.update

            def counted(*args: Any, _name: str = name, _real: Any = real, **kw: Any) -> None:
                updates[_name] = updates.get(_name, 0) + 1
                _real(*args, **kw)

            panel.update = counted  # type: ignore[method-assign]
        assert view.show(fleet, now) == 0 and not updates  # nothing changed: nothing drawn
        for name in panels:
            fleet.apply_gpus(name, _gpus(97, host=name), t=now + 1)
        assert view.show(fleet, now + 1) >= 1
        seen = {n for n, p in panels.items() if view.in_sight(p)}
        assert seen and set(updates) == seen and len(seen) < 8  # the ones below were left alone
        assert "97%" in str(panels["h00"].render())
        view.scroll_end(animate=False)
        last = panels["h07"]
        await until(
            pilot,
            lambda: view.in_sight(last) and "97%" in str(last.render()),
            "the last host in sight, caught up when scrolled to",
        )
        # a host that goes quiet says how old its data is: the clock alone changes the panel
        before = updates.get("h07", 0)
        view.show(fleet, now + 60)
        assert updates["h07"] == before + 1 and "data 1m00s old" in str(last.render())


# -- the jobs table ----------------------------------------------------------------------------------


@sync
async def test_ended_rows_are_not_recomputed_until_their_job_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = _fleet(1)
    fleet.apply_jobs(
        "h00",
        [_job(f"e{i:03d}", "exited", f"old-{i}") for i in range(50)] + [_job("r000", "running", "live")],
    )
    table = JobsTable()
    app = _Views(table)
    built = record_calls(monkeypatch, jobs_table, "job_row", lambda job, *args: job.id)
    async with app.run_test(size=(200, 30)) as pilot:
        table.show(fleet, NOW)
        await pilot.pause()
        # every row once (a resize's redraw may recompute the live row again: its runtime ticks)
        assert table.row_count == 51 and len(set(built)) == 51 and len(built) - built.count("r000") == 50, (
            built
        )
        built.clear()
        table.show(fleet, NOW + 1)
        assert built == ["r000"]  # only the live job: its runtime ticks
        built.clear()
        fleet.apply_jobs("h00", [_job("e007", "exited", "renamed")])
        table.show(fleet, NOW + 2)
        assert sorted(built) == ["e007", "r000"]
        assert str(table.get_cell("e007", "name")) == "renamed"


@sync
async def test_a_cell_whose_colour_changes_with_the_same_text_is_redrawn() -> None:
    fleet = _fleet(1)
    fleet.apply_jobs("h00", [_job("e000", "exited", "old")])
    table = JobsTable()
    app = _Views(table)
    async with app.run_test(size=(200, 10)) as pilot:
        fleet.costs = CostBoard(
            jobs={"e000": JobCostShown(accrued=12.0, budget=20.0, budget_status="warning")}
        )
        table.show(fleet, NOW)
        await pilot.pause()
        fleet.costs = CostBoard(jobs={"e000": JobCostShown(accrued=12.0, budget=10.0, budget_status="over")})
        table.show(fleet, NOW + 1)
        cell = table.get_cell("e000", "cost")
        assert cell.plain == "$12.00" and "$error" in str(cell.spans[0].style)  # over budget: red, same text


@sync
async def test_a_cell_changed_and_changed_back_shows_the_value_it_came_back_to() -> None:
    # The row cache must hold what is drawn: after 0.5 -> 0.75 -> 0.5 the table shows 0.5 again,
    # for a live job (recomputed every show) and an ended one (recomputed when its job changes).
    fleet = _fleet(1)
    fleet.apply_jobs("h00", [_job("r000", "running", "live"), _job("e000", "exited", "old")])
    table = JobsTable()
    app = _Views(table)
    async with app.run_test(size=(200, 10)) as pilot:
        for t, loss, name in ((0, 0.5, "old"), (1, 0.75, "renamed"), (2, 0.5, "old"), (3, 0.5, "old")):
            fleet.apply_jobs(
                "h00",
                [
                    {
                        **_job("r000", "running", "live"),
                        "last": {"step": 10 + t, "loss": loss},
                        "last_seq": t + 1,
                    },
                    _job("e000", "exited", name),
                ],
            )
            table.show(fleet, NOW + t)
            await pilot.pause()
            assert str(table.get_cell("r000", "loss")) == jobs_table.number(loss)
            assert str(table.get_cell("e000", "name")) == name


def test_sorting_by_cost_puts_the_dearest_first_and_the_unknown_last() -> None:
    fleet = _fleet(1)
    fleet.apply_jobs("h00", [_job(f"e00{i}", "exited", f"j{i}") for i in range(3)])
    fleet.costs = CostBoard(jobs={"e000": JobCostShown(accrued=1.0), "e002": JobCostShown(accrued=5.0)})
    assert [j.id for j in jobs_table.arrange(fleet, "", "cost")] == ["e002", "e000", "e001"]


# -- the deck ------------------------------------------------------------------------------------------


@pytest.mark.slow
@sync
async def test_deck_draws_the_tab_in_sight_and_catches_up_when_uncovered(
    gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_tui_snapshots import Replayed  # the recorded session, replayed at speed 0

    r = Replayed(monkeypatch)
    drawn = {"table": 0, "fleet": 0}
    for cls, name in ((JobsTable, "table"), (FleetView, "fleet")):
        real = cls.show

        def show(self: Any, *args: Any, _real: Any = real, _name: str = name) -> Any:
            drawn[_name] += 1
            return _real(self, *args)

        monkeypatch.setattr(cls, "show", show)
    app = r.app
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, r.settled, "the replay to settle")
        await pilot.pause(0.3)
        assert drawn["fleet"] and not drawn["table"]  # the jobs tab was never in sight
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: table.row_count == 2, "both rows, drawn when the tab is shown")
        fleet_draws = drawn["fleet"]
        app.post_message(FleetChanged(frozenset({"hosts", "state"})))
        await until(pilot, lambda: drawn["table"] >= 2, "the table redrawn")
        assert drawn["fleet"] == fleet_draws  # the fleet tab is hidden now
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        deck_draws = drawn["table"]
        app.post_message(FleetChanged(frozenset({"state"})))
        await pilot.pause(0.2)
        assert drawn["table"] == deck_draws  # covered: nothing drawn
        job_screen = app.screen
        job_draws: list[frozenset[str]] = []
        real_draw = job_screen._draw
        monkeypatch.setattr(job_screen, "_draw", lambda tags: (job_draws.append(tags), real_draw(tags)))
        await pilot.press("l")  # the full log covers the job view in turn
        await until(pilot, lambda: type(app.screen).__name__ == "LogScreen", "the full log")
        await pilot.pause()
        job_draws.clear()  # (a cost tick may have drawn it before the log covered it)
        app.post_message(FleetChanged(frozenset({"series"})))
        await pilot.pause(0.2)
        assert not job_draws
        await pilot.press("escape")
        await until(
            pilot,
            lambda: app.screen is job_screen and any("series" in t for t in job_draws),
            "the job view caught up with the series it missed",
        )
        await pilot.press("escape")
        await until(
            pilot,
            lambda: isinstance(app.screen, DeckScreen) and drawn["table"] > deck_draws,
            "the deck caught up when back on top",
        )
