"""Every theme at 80×24 and 220×60: the deck's fleet, jobs and cloud tabs and a job view, on the GPU
fleet of docs/gpu_fleet.py (3 hosts × 8 H100, two running jobs) played by the replay transport with
the client clock stopped (as test_tui_wide_snapshots.py). One app per theme and size takes its four
pictures in turn, so the 24 pictures cost six app runs. And the replay as `gpudeck --replay` plays it,
with every tab key pressed.
Update after a deliberate UI change: `pytest tests/test_tui_theme_snapshots.py --snapshot-update`."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion
from textual.pilot import Pilot

from tests.support.tui import redrawn, sync, until
from tests.test_tui_wide_snapshots import RECORDING, GpuFleet
from tui.app import GpuDeckApp
from tui.remote.replay import Recording
from tui.screens.job import JobScreen
from tui.services import connections as feed
from tui.widgets.jobs_table import JobsTable
from tui.widgets.output_log import OutputLog

THEMES = ["gpudeck-dark", "gpudeck-light", "gpudeck-high-contrast"]
SIZES = [(80, 24), (220, 60)]
SFT = "20261202-031214-7f3a9c"  # the two-node job: 16 GPUs in its chart


async def pictures(pilot: Pilot, fleet: GpuFleet) -> dict[str, str]:
    """The fleet, jobs and cloud tabs and the two-node job's view, as SVG text."""
    app = fleet.app
    shots: dict[str, str] = {}

    async def shoot(name: str) -> None:
        await redrawn(pilot, app)  # the throttled redraw after the last drain
        app.clear_notifications()
        await pilot.pause()
        picture = app.export_screenshot(title=name)
        for _ in range(20):  # a busy machine: a redraw still pending; the picture once it holds
            await pilot.pause(0.3)
            again = app.export_screenshot(title=name)
            if again == picture:
                break
            picture = again
        shots[name] = picture

    await until(pilot, fleet.settled, "the replay to settle", timeout=90.0)
    await fleet.costs_steady(pilot)
    await shoot("fleet")
    await pilot.press("2")
    table = app.screen.query_one(JobsTable)
    await until(pilot, lambda: table.row_count == 2, "both rows")
    await shoot("jobs")
    await pilot.press("3")
    await shoot("cloud")
    await pilot.press("2")
    await app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, SFT))
    output = app.screen.query_one(OutputLog)
    await until(pilot, lambda: output.line_count >= 40, "the output tail", timeout=90.0)  # a busy machine
    await shoot("job")
    return shots


@pytest.mark.slow
@pytest.mark.timeout(400)  # four pictures of one app; a loaded 2-core machine takes minutes
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@sync
async def test_every_theme_and_size(
    gpudeck_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    snapshot: SnapshotAssertion,
    theme: str,
    size: tuple[int, int],
) -> None:
    fleet = GpuFleet(monkeypatch)
    async with fleet.app.run_test(size=size) as pilot:
        fleet.app.theme = theme
        shots = await pictures(pilot, fleet)
    svg = snapshot.use_extension(SVGImageExtension)
    for name, picture in shots.items():
        assert picture == svg(name=name), f"{theme} {size}: {name}"


@sync
async def test_the_replay_survives_every_tab_key(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feed, "GPU_PERIOD", 0.05)
    monkeypatch.setattr(feed, "JOBS_PERIOD", 0.05)
    recording = Recording.load(RECORDING)
    app = GpuDeckApp(
        hosts=recording.hosts,
        transport=lambda host: recording.transport(host, speed=0),
        store=None,
        replay=RECORDING.name,
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: len(app.fleet.jobs) == 2, "the jobs")
        for key in "1231321":
            await pilot.press(key)
            await pilot.pause(0.1)
            assert app.is_running, f"the app ended at {key!r}"
        assert app.return_code in (None, 0) and app._exception is None
