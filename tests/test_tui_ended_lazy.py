"""An ended job is read lazily (issue 36, finding 6): the TUI on a home with a long ended job prices
it from the agent's `cost_summary` without reading its journal, and opening it draws the agent's
downsampled series, held within the series' bound, still without replaying the journal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.long_job import write_ended_job
from tests.support.tui import open_a_job, sync, until
from tui.app import GpuDeckApp
from tui.live.link import HostLink

JOB = "20261206-000000-1a2e0d"
POINTS = 20_000


@pytest.mark.slow
@sync
async def test_a_long_ended_job_costs_and_draws_without_its_journal(
    gpudeck_home: Path, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_ended_job(agent_dir, JOB, "long", POINTS, spike_at=12_345)
    (gpudeck_home / "hosts.toml").write_text("[hosts.local]\nprice_per_hour = 3600.0\n")
    tails: list[tuple[str, int]] = []
    real_tail = HostLink.tail

    def counted_tail(self: HostLink, job: str, node: str, since_seq: int) -> None:
        tails.append((job, since_seq))
        real_tail(self, job, node, since_seq)

    monkeypatch.setattr(HostLink, "tail", counted_tail)
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(
            pilot,
            lambda: (c := app.fleet.costs.jobs.get(JOB)) is not None and c.accrued is not None,
            "the ended job's cost",
            timeout=30,
        )
        job = app.fleet.jobs[JOB]
        assert job.caught_up and not job.has_history  # a summary: its cost known, no series held
        assert app.fleet.costs.jobs[JOB].accrued > 0
        await open_a_job(pilot, app)
        tails_service = app.connections.tails
        await until(
            pilot,
            lambda: "loss" in job.series and not tails_service.loading,
            "the agent's series drawn",
            timeout=30,
        )
        loss = job.series["loss"]
        assert loss.max == 50.0  # the spike survived the downsampling
        assert len(loss) <= loss.capacity and len(job.step_time) <= job.step_time.capacity
        # A tail is marked on the app thread before its worker asks: none was, none will be.
        assert (JOB, "0") not in app.connections.links["local"].tailed
        assert tails == []  # not one journal read: neither for the counters nor for the chart
        assert job.nodes["0"].last_seq == 0
