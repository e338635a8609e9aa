"""Opening a long job: the chart shows the agent's downsampled series before the journal is read
(issue 13/17); an ended job the agent sums up (`cost_summary`) is never replayed at all (issue 36);
its series go back to a summary when its view closes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.long_job import write_ended_job
from tests.support.tui import open_a_job, sync, until
from tui.app import GpuDeckApp
from tui.live.link import HostLink
from tui.widgets.charts import LossChart

JOB = "20261201-000000-10a6e0"
POINTS = 30_000


@pytest.mark.slow
@sync
async def test_the_chart_draws_the_downsampled_series_before_the_journal_arrives(
    gpudeck_home: Path, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_ended_job(agent_dir, JOB, "long", POINTS, spike_at=20_000)
    (gpudeck_home / "config.toml").write_text("[ui]\nkept_ended_jobs = 0\n")
    release = threading.Event()
    tails: list[int] = []
    real_tail = HostLink.tail

    def held_tail(self: HostLink, job: str, node: str, since_seq: int) -> None:
        tails.append(since_seq)
        release.wait(300)  # the journal is held back until the test has seen the chart (or gave up)
        real_tail(self, job, node, since_seq)

    monkeypatch.setattr(HostLink, "tail", held_tail)
    drawn: list[tuple[int, float, float]] = []  # per loss line drawn: points, last x, highest y
    real_x = LossChart._x

    def seen_x(self: LossChart, job: Any, name: str, pts: list[tuple[float, float]]) -> Any:
        if name == "loss" and pts:
            drawn.append((len(pts), pts[-1][0], max(y for _, y in pts)))
        return real_x(self, job, name, pts)

    monkeypatch.setattr(LossChart, "_x", seen_x)
    app = GpuDeckApp(store=None)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await until(
                pilot,
                lambda: JOB in app.fleet.jobs and app.fleet.jobs[JOB].nodes["0"].remote_last_seq,
                "the job listed",
            )
            await open_a_job(pilot, app)
            job = app.fleet.jobs[JOB]
            await until(
                pilot,
                lambda: drawn and drawn[-1][1] >= 0.95 * POINTS,
                "the whole run on the chart",
                timeout=30,
            )
            assert job.nodes["0"].last_seq == 0  # not one journal record applied yet: the agent's series
            n, _, top = drawn[-1]
            assert n <= 2 * 160 + 16 and top == 50.0  # downsampled to the chart, the spike kept
            release.set()
            assert job.caught_up  # its costs from the agent's summary: no journal to read
            assert (
                tails == []
                and job.series["loss"].max == 50.0
                and job.last["loss"] == pytest.approx(1 / POINTS, abs=1e-6)
            )
            await pilot.press("escape")  # kept_ended_jobs = 0: back to a summary at once
            await until(pilot, lambda: not job.has_history, "the series dropped")
            assert job.state == "exited" and job.last["loss"] == pytest.approx(1 / POINTS, abs=1e-6)
            drawn.clear()
            await open_a_job(pilot, app)  # opened again: the agent's series again, no journal replayed
            await until(
                pilot, lambda: drawn and drawn[-1][1] >= 0.95 * POINTS and drawn[-1][2] == 50.0, "drawn again"
            )
            assert tails == []
    finally:
        release.set()  # a failing test must not leave the held tail waiting
