"""The loss chart's EMA smoothing (`e`) and x axis in steps or seconds (`x`): the transforms on known
numbers, then both keys on the real app with a real job, shown in the footer and drawn in the chart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.widgets._footer import FooterKey

from tests.support.jobs import launch, wait_state
from tests.support.tui import open_a_job, sync, until
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient
from tui.widgets.charts import LossChart
from tui.widgets.loss_axes import ema, seconds_to_steps, steps_to_seconds


def test_ema_is_debiased_and_skips_non_finite_points() -> None:
    smoothed = ema([(1, 10.0), (2, float("nan")), (3, 0.0)], weight=0.5)
    assert smoothed[0] == (1, 10.0)  # debiased: the first point is itself, not 2.0
    assert smoothed[1] == (3, pytest.approx((0.25 * 10 + 0.5 * 0) / 0.75))
    assert len(smoothed) == 2


def test_steps_map_to_seconds_and_back_through_the_record() -> None:
    record = [(0.0, 100.0), (10.0, 120.0), (20.0, 130.0), (5.0, 200.0)]  # the last: a step back, dropped
    assert steps_to_seconds([(5.0, 1.0), (15.0, 2.0), (40.0, 3.0)], record, t0=100.0) == [
        (10.0, 1.0),
        (25.0, 2.0),
        (30.0, 3.0),
    ]  # linear between records, held beyond the last
    assert seconds_to_steps([(110.0, 1.0), (125.0, 2.0)], record) == [(5.0, 1.0), (15.0, 2.0)]
    assert steps_to_seconds([(1.0, 1.0)], [], t0=0.0) is None and seconds_to_steps([(1.0, 1.0)], []) is None


def _drawn(chart: LossChart) -> str:
    rendered = chart.render()
    return getattr(rendered, "plain", str(rendered))


LOSSES = (
    "import json, time\n"
    "for i in range(1, 41):\n"
    "    print(json.dumps({'step': i * 10, 'loss': 4.0 / i + (0.5 if i % 2 else 0.0)}), flush=True)\n"
    "    time.sleep(0.02)\n"
)


@pytest.mark.slow
@sync
async def test_e_smooths_and_x_switches_the_loss_axis(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job_id = launch(client, workdir, [sys.executable, "-c", LOSSES], name="axes")["id"]
    wait_state(client, job_id, {"exited"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: job_id in app.fleet.jobs, "the job")
        await open_a_job(pilot, app)
        job = app.fleet.jobs[job_id]
        await until(pilot, lambda: "loss" in job.series and job.series["loss"].count == 40, "the points")
        shown = {k.key for k in app.screen.query(FooterKey)}
        assert {"e", "x"} <= shown
        chart = app.screen.query_one(LossChart)
        await until(pilot, lambda: "step" in _drawn(chart), "the step axis")
        assert "seconds" not in _drawn(chart) and "EMA" not in _drawn(chart)

        await pilot.press("e")
        await until(pilot, lambda: "EMA 0.8" in _drawn(chart), "smoothed")
        await pilot.press("x")
        await until(
            pilot, lambda: "seconds" in _drawn(chart) and "per second" in _drawn(chart), "the time axis"
        )
        assert len(job.step_time) == 40  # every step kept with its time, replayed history included
        await pilot.press("x", "e")
        await until(
            pilot, lambda: "seconds" not in _drawn(chart) and "EMA" not in _drawn(chart), "back to steps, raw"
        )
