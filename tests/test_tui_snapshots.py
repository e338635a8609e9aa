"""Snapshot tests (pytest-textual-snapshot) of the fleet, jobs and job views at 80×24, 160×48 and 220×60,
fed by the recording in tests/data/recordings through the replay transport: no agent, fixed data.

Stable run to run because (1) the replay answers at speed 0 and each test waits until every
recorded answer and event has been served and applied, (2) the client clock is fixed: the app's
fleet clock and the `time` the screens read for runtimes and staleness, and the replayed hello
carries the recorded host time, so runtimes are the recorded ones; (3) notifications (job-ended
toasts, whose count depends on how polls fell) are cleared before the shot.
Update after a deliberate UI change: `pytest tests/test_tui_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.support.tui import redrawn, until
from tui.app import GpuDeckApp
from tui.remote.replay import Recording, ReplayTransport
from tui.screens.job import JobScreen
from tui.services import connections as feed
from tui.widgets.jobs_table import JobsTable
from tui.widgets.output_log import OutputLog

RECORDING = Path(__file__).parent / "data" / "recordings" / "session.jsonl"
SMALL, LARGE, WIDE = (80, 24), (160, 48), (220, 60)
SIZES = [
    pytest.param(SMALL, id="80x24"),
    pytest.param(LARGE, id="160x48"),
    pytest.param(WIDE, id="220x60", marks=pytest.mark.slow),
]  # 80×24 up to 220×60: the layout adapts
NOW = 1_796_000_000.0  # the client's stopped clock; any value: runtimes come from the host clock
SnapCompare = Callable[..., bool]


class _FixedTime(ModuleType):
    """`time` for tui's modules, with the wall clock stopped (monotonic keeps running: timers)."""

    def __init__(self, now: float) -> None:
        super().__init__("time")
        self._now = now

    def time(self) -> float:
        return self._now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


class Replayed:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.recording = Recording.load(RECORDING)
        # Polls take the recorded answers one by one: poll fast, so the replay is served in ~1 s.
        monkeypatch.setattr(feed, "GPU_PERIOD", 0.05)
        monkeypatch.setattr(feed, "JOBS_PERIOD", 0.05)
        self.now = NOW
        fixed = _FixedTime(self.now)
        for name, module in list(sys.modules.items()):
            if name.startswith("tui.") and getattr(module, "time", None) is time:
                monkeypatch.setattr(module, "time", fixed)
        self.transports: list[ReplayTransport] = []
        self.app = GpuDeckApp(
            hosts=self.recording.hosts, transport=self._transport, store=None, clock=lambda: self.now
        )

    def _transport(self, host: str) -> ReplayTransport:
        t = self.recording.transport(host, speed=0)
        self.transports.append(t)
        return t

    def settled(self) -> bool:
        """Every recorded poll answer and journal event served, and the fleet shows the end."""
        jobs = self.app.fleet.jobs
        return (
            bool(self.transports)
            and all(t.exhausted("gpus") and t.exhausted("jobs") and not t.pending for t in self.transports)
            and len(jobs) == 2
            and not any(j.active for j in jobs.values())
            and all(
                n.remote_last_seq is not None and n.last_seq >= n.remote_last_seq
                for j in jobs.values()
                for n in j.nodes.values()
            )
        )


def view(r: Replayed, tab: str) -> Callable[[Pilot], Awaitable[None]]:
    async def run_before(pilot: Pilot) -> None:
        await until(pilot, r.settled, "the replay to settle")
        await redrawn(pilot, r.app)  # the throttled redraw after the last drain
        if tab in ("jobs", "job"):
            await pilot.press("2")
            table = r.app.screen.query_one(JobsTable)
            await until(pilot, lambda: table.row_count == 2, "both rows")
        if tab == "job":
            train = next(j for j in r.app.fleet.jobs.values() if j.name == "resnet-demo")
            for _ in range(2):
                if table.selected_id != train.id:
                    await pilot.press("down")
            assert table.selected_id == train.id
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(r.app.screen, JobScreen), "the job view")
            output = r.app.screen.query_one(OutputLog)
            await until(pilot, lambda: output.line_count >= 60, "the output tail")
            await redrawn(pilot, r.app)
        r.app.clear_notifications()
        await pilot.pause()

    return run_before


@pytest.fixture
def replayed(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> Replayed:
    return Replayed(monkeypatch)


@pytest.mark.parametrize("size", SIZES)
def test_fleet_view(snap_compare: SnapCompare, replayed: Replayed, size: tuple[int, int]) -> None:
    assert snap_compare(replayed.app, terminal_size=size, run_before=view(replayed, "fleet"))


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_jobs_view(snap_compare: SnapCompare, replayed: Replayed, size: tuple[int, int]) -> None:
    assert snap_compare(replayed.app, terminal_size=size, run_before=view(replayed, "jobs"))


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_job_view(snap_compare: SnapCompare, replayed: Replayed, size: tuple[int, int]) -> None:
    assert snap_compare(replayed.app, terminal_size=size, run_before=view(replayed, "job"))
