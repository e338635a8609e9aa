"""The wide layout (issue #17: 220×60): from 180×50 the host panels draw memory, power and
temperature sparklines per GPU besides utilization, and the jobs table adds a loss trend, tokens/s,
burn and ETA columns; below that nothing of it is drawn or computed. The pilot test drives the real
app against the real `local` agent and a real training script, resizing 120 → 220 → 120 columns."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.content import Content
from textual.geometry import Size

from tests.support.tui import sync, until
from tests.test_tui_cost import PRICED, cell, launch
from tui.app import GpuDeckApp
from tui.fleet import Fleet, JobModel
from tui.fleet.gpu_trail import TRAIL_POINTS
from tui.fleet.series import Series
from tui.widgets.gauges import BLOCKS, trend
from tui.widgets.host_panel import render_host
from tui.widgets.jobs_table import COLUMNS, JobsTable, with_wide
from tui.widgets.table_fit import fit_columns
from tui.widgets.wide import is_wide


def _styled(content: Content, style: str) -> str:
    return "".join(content.plain[s.start : s.end] for s in content.spans if str(s.style) == style)


def _sampled_fleet(samples: int) -> Fleet:
    """One host, one GPU warming up: memory filling, power rising over its limit, temperature rising."""
    fleet = Fleet(clock=lambda: 1000.0)
    for i in range(samples):
        fleet.apply_gpus(
            "box",
            {
                "available": True,
                "gpus": [
                    {
                        "index": 0,
                        "name": "H100",
                        "util": 90,
                        "mem_used_mib": 80000 * (i + 1) / samples,
                        "mem_total_mib": 80000,
                        "temp_c": 66 + i,
                        "power_w": 300 + 12 * i,
                        "power_limit_w": 400,
                    }
                ],
            },
            t=1000.0 + i,
        )
    fleet.set_host_status("box", "connected")
    return fleet


def test_wide_is_180_columns_and_50_rows() -> None:
    assert is_wide(Size(220, 60)) and is_wide(Size(180, 50))
    assert not is_wide(Size(179, 60)) and not is_wide(Size(220, 49)) and not is_wide(Size(80, 24))


def test_a_wide_panel_draws_memory_power_and_temperature_with_theme_colours() -> None:
    fleet = _sampled_fleet(30)  # as many as the 216-cell panel's sparklines are wide
    host = fleet.hosts["box"]
    wide = render_host(host, fleet, 1000.0, 216, wide=True)
    spark_line = wide.plain.splitlines()[2]
    assert all(label in spark_line for label in ("util ", " mem ", " pwr ", " °C "))
    mem = _styled(wide, "$spark-mem")
    assert len(mem) == 30 and mem[0] < mem[-1] and mem[-1] == BLOCKS[-1]  # rising, ending full
    # thresholds as in the bars' line: 85 °C and up is hot, above the power limit is over
    assert len(_styled(wide, "$gpu-hot")) == 11  # 85…95 °C
    assert len(_styled(wide, "$power-over")) == 21  # 408…648 W, above 400
    assert _styled(wide, "bold $gpu-hot") == "95°C" and _styled(wide, "bold $power-over") == "648/400W"
    assert "$spark-power" in {str(s.style) for s in wide.spans} and "$spark-temp" in {
        str(s.style) for s in wide.spans
    }
    # narrower (a 120-cell panel): utilization and memory only, no power or temperature
    narrow_wide = render_host(host, fleet, 1000.0, 120, wide=True).plain.splitlines()[2]
    assert " mem " in narrow_wide and " pwr " not in narrow_wide and " °C " not in narrow_wide
    # not wide: the usual panel, one utilization sparkline and nothing of the extras
    usual = render_host(host, fleet, 1000.0, 216)
    assert " mem " not in usual.plain.splitlines()[2] and not _styled(usual, "$spark-mem")


def test_trails_are_bounded_and_unknown_readings_add_nothing() -> None:
    fleet = _sampled_fleet(TRAIL_POINTS + 50)
    trail = fleet.hosts["box"].trails[0]
    assert len(trail.mem_pct) == len(trail.power_w) == len(trail.temp_c) == TRAIL_POINTS
    fleet.apply_gpus(
        "box",
        {
            "available": True,
            "gpus": [{"index": 0, "util": 5, "mem_used_mib": None, "temp_c": None, "power_w": None}],
        },
    )
    assert len(trail.readings) == TRAIL_POINTS  # the oldest reading made room
    assert trail.temp_c[-1] == 66 + TRAIL_POINTS + 49 and len(trail.temp_c) == TRAIL_POINTS - 1  # no 0 drawn


def test_the_loss_trend_scales_between_its_own_extremes() -> None:
    falling = trend([2.0, 1.0, 0.5, 0.25, 0.2], 8, "$spark-loss")
    assert falling.plain == "   " + BLOCKS[8] + BLOCKS[4] + BLOCKS[2] + BLOCKS[1] + BLOCKS[1]
    assert {str(s.style) for s in falling.spans} == {"$spark-loss"}
    assert trend([3.0, 3.0], 4, "$spark-loss").plain == "  " + BLOCKS[1] * 2  # flat: the bottom row
    assert trend([], 4, "$spark-loss").plain == "—"


def test_the_wide_columns_sit_next_to_their_kin() -> None:
    keys = [k for k, _, _ in with_wide(COLUMNS)]
    assert keys == [
        "name",
        "hosts",
        "state",
        "runtime",
        "step",
        "loss",
        "trend",
        "rate",
        "tokens",
        "gpu",
        "cost",
        "burn",
        "eta",
        "info",
    ]


def test_a_narrow_table_computes_nothing_of_the_wide_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The extra cost is paid only when the terminal is wide: no loss series is downsampled."""
    fleet = Fleet(clock=lambda: 1000.0)
    job = JobModel(id="j1", name="train", state="running")
    job.series["loss"] = loss = Series()
    for step in range(1, 200):
        loss.add(step, 2.0 / step)
    fleet.jobs[job.id] = job
    calls: list[int] = []
    real = Series.downsample
    monkeypatch.setattr(Series, "downsample", lambda self, w: calls.append(w) or real(self, w))
    table = JobsTable()
    narrow = table._row(job, fleet, 1000.0)
    assert len(narrow) == len(COLUMNS) and calls == []
    table._columns = with_wide(COLUMNS)
    wide = dict(zip((k for k, _, _ in table._columns), table._row(job, fleet, 1000.0), strict=True))
    assert calls == [24] and str(wide["trend"])[0] == BLOCKS[8] and str(wide["trend"])[-1] == BLOCKS[1]


def _columns(app: GpuDeckApp) -> list[str]:
    return [str(key.value) for key in app.screen.query_one(JobsTable).columns]


@pytest.mark.slow
@sync
async def test_resizing_to_220_columns_adds_the_trend_column_and_back_removes_it(
    gpudeck_home: Path, script: str
) -> None:
    (gpudeck_home / "hosts.toml").write_text(PRICED)  # a price: the burn column has a figure
    app = GpuDeckApp()
    async with app.run_test(size=(120, 60)) as pilot:
        job = await launch(pilot, "wide", script)
        await pilot.press("2")
        await until(pilot, lambda: len(job.series.get("loss") or ()) >= 5, "a few loss points")
        assert "trend" not in _columns(app) and "eta" not in _columns(app)

        await pilot.resize_terminal(220, 60)
        await until(pilot, lambda: "trend" in _columns(app), "the trend column")
        assert {"tokens", "burn", "eta"} <= set(_columns(app))
        await until(pilot, lambda: cell(app, job, "trend").strip(" ▁") != "", "a drawn loss trend")
        await until(pilot, lambda: cell(app, job, "burn").startswith("$"), "the burn per hour")
        await until(pilot, lambda: cell(app, job, "eta") != "—", "the ETA in its column")
        assert "ETA" not in cell(app, job, "info")  # told once, in its own column

        await pilot.resize_terminal(220, 40)  # wide but not tall: the usual table
        await until(pilot, lambda: "trend" not in _columns(app), "the trend column gone (40 rows)")
        await pilot.resize_terminal(220, 60)
        await until(pilot, lambda: "trend" in _columns(app), "the trend column back")
        await pilot.resize_terminal(120, 60)
        await until(pilot, lambda: "trend" not in _columns(app), "the trend column gone (120 columns)")
        assert _columns(app)[0] == "name" and "eta" not in _columns(app)


def test_the_rings_history_fills_the_trails_at_once() -> None:
    """A client that just connected draws the last minute of memory, power and temperature from
    serve's 1 Hz ring (which keeps them), not an empty sparkline."""
    fleet = Fleet(clock=lambda: 5000.0)
    history = [
        {
            "t": 4000.0 + s,
            "gpus": [
                {"index": 0, "util": 50, "mem_used_mib": 400 * s, "temp_c": 40 + s % 10, "power_w": 100 + s}
            ],
        }
        for s in range(100)
    ]
    fleet.apply_gpus(
        "box",
        {
            "available": True,
            "history": history,
            "gpus": [
                {
                    "index": 0,
                    "util": 50,
                    "mem_used_mib": 40000,
                    "mem_total_mib": 40000,
                    "temp_c": 45,
                    "power_w": 200,
                }
            ],
        },
    )
    trail = fleet.hosts["box"].trails[0]
    assert len(trail.power_w) == TRAIL_POINTS  # the ring's last points, then the live sample
    assert list(trail.power_w)[-2:] == [199.0, 200.0]
    assert list(trail.mem_pct)[-2:] == [99.0, 100.0]  # 39,600 of the sample's 40,000 MiB, then full


def test_two_readings_at_one_time_are_one_point_the_latest() -> None:
    """As in the utilization Series: a poll answered twice within one clock tick adds no point
    (the 220×60 snapshot's fixed clock relies on it being the same however often the replay is polled)."""
    fleet = Fleet(clock=lambda: 1000.0)
    for temp in (50, 70):
        fleet.apply_gpus("box", {"available": True, "gpus": [{"index": 0, "temp_c": temp, "power_w": None}]})
    fleet.apply_gpus(
        "box", {"available": True, "gpus": [{"index": 0, "temp_c": 60, "power_w": 90}]}, t=1001.0
    )
    trail = fleet.hosts["box"].trails[0]
    assert list(trail.temp_c) == [70.0, 60.0] and list(trail.power_w) == [90.0]


def test_at_180_columns_the_extras_that_do_not_fit_drop_last_first() -> None:
    """178 cells (180 less the scrollbar): the loss trend, ETA and burn fit, tokens/s does not;
    at 220 all do; the usual columns never give way to an extra."""
    keys = [k for k, _, _ in fit_columns(with_wide(COLUMNS), 178)]
    assert {"trend", "eta", "burn"} <= set(keys) and "tokens" not in keys
    assert {k for k, _, _ in COLUMNS} <= set(keys)
    assert [k for k, _, _ in fit_columns(with_wide(COLUMNS), 218)] == [k for k, _, _ in with_wide(COLUMNS)]


def test_eta_moves_back_into_info_when_its_column_is_not_shown() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    job = JobModel(id="j2", name="train", state="running", step=100, total_steps=1100)
    job._progress.extend([(900.0, 0.0), (1000.0, 100.0)])  # one step a second: 1000 s left
    fleet.jobs[job.id] = job

    def cells(columns: tuple[tuple[str, str, int], ...]) -> dict[str, str]:
        table = JobsTable()
        table._columns = columns
        return {k: str(v) for (k, _, _), v in zip(columns, table._row(job, fleet, 1000.0), strict=True)}

    wide = cells(fit_columns(with_wide(COLUMNS), 178))
    assert wide["eta"] == "16m40s" and "ETA" not in wide["info"]
    usual = cells(fit_columns(COLUMNS, 218))
    assert "eta" not in usual and usual["info"] == "ETA 16m40s"
