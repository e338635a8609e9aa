"""The TUI's JobControl runs tui/actions through the connection service: a priced launch asks the
host for its GPUs and jobs (the budget's share) without feeding those answers to the fleet as jobs,
and a stop from the TUI ends the job like the CLI's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tui import sync, until
from tui.actions.options import LaunchOptions
from tui.app import GpuDeckApp

PRICED = "[hosts.local]\nprice_per_hour = 3600\n"


@pytest.mark.slow  # the everyday subset stays under a minute serially
@sync
async def test_a_priced_launch_and_a_stop_from_the_tui(gpudeck_home: Path, script: str) -> None:
    (gpudeck_home / "hosts.toml").write_text(PRICED)
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
        opts = LaunchOptions(argv=tuple(script.split()), name="priced", budget=100.0, grace=5.0)
        app.job_control.launch(opts, "20261201-000000-abc123")
        await until(
            pilot,
            lambda: (
                "20261201-000000-abc123" in app.fleet.jobs
                and app.fleet.jobs["20261201-000000-abc123"].state == "running"
            ),
            "running",
        )
        assert set(app.fleet.jobs) == {"20261201-000000-abc123"} and app.fleet.bad_records == 0
        job = app.fleet.jobs["20261201-000000-abc123"]
        assert job.nodes["0"].grace == 5.0
        app.job_control.end(job, "stop")
        await until(pilot, lambda: job.ended, "stopped")
        await until(
            pilot, lambda: any("priced: stopped" in str(n.message) for n in app._notifications), "said"
        )
