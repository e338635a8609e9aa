"""Snapshots of the wide layout (220×60) on a GPU fleet: the recording docs/gpu_fleet.py makes
(3 hosts × 8 H100 with serve's 1 Hz ring, two running jobs with their loss), played by the replay
transport with the client clock stopped, as in test_tui_snapshots.py. The host panels show memory,
power and temperature sparklines per GPU; the jobs table the loss trend, tokens/s, burn and ETA.
Update after a deliberate UI change: `pytest tests/test_tui_wide_snapshots.py --snapshot-update`."""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.support.tui import redrawn, until
from tests.test_tui_snapshots import NOW, SnapCompare, _FixedTime
from tui.app import GpuDeckApp
from tui.remote.replay import Recording, ReplayTransport
from tui.services import connections as feed
from tui.widgets.jobs_table import JobsTable

RECORDING = Path(__file__).resolve().parent.parent / "docs" / "gpu-fleet.jsonl"
WIDE = (220, 60)


def at_the_end_with_the_ring(recording: Recording) -> Recording:
    """At speed 0 the replay answers a poll with the recording's last answer, where a real serve
    asked for `history_since` answers with its ring too: give the last answer the recorded ring, so
    the sparklines show five minutes (with the client clock stopped, live polls add one point)."""
    for tape in recording.tapes.values():
        answers = tape.answers["gpus"]
        ring = next(a["result"]["history"] for _, a in answers if "history" in a["result"])
        answers[-1][1]["result"]["history"] = ring
    return recording


class GpuFleet:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        recording = at_the_end_with_the_ring(Recording.load(RECORDING))
        monkeypatch.setattr(feed, "GPU_PERIOD", 0.05)  # take the recorded polls at once
        monkeypatch.setattr(feed, "JOBS_PERIOD", 0.05)
        fixed = _FixedTime(NOW)
        for name, module in list(sys.modules.items()):
            if name.startswith("tui.") and getattr(module, "time", None) is time:
                monkeypatch.setattr(module, "time", fixed)
        self.transports: list[ReplayTransport] = []

        def transport(host: str) -> ReplayTransport:
            self.transports.append(t := recording.transport(host, speed=0))
            return t

        self.app = GpuDeckApp(
            hosts=recording.hosts,
            transport=transport,
            store=None,
            clock=lambda: NOW,
            host_settings=recording.host_settings,  # the recorded prices, as `gpudeck --replay` takes them
        )

    def settled(self) -> bool:
        jobs = self.app.fleet.jobs
        costs = self.app.fleet.costs  # computed in a worker after the data: the header's $/h and today
        return (
            costs.burn is not None
            and costs.today is not None
            and set(jobs) <= set(costs.jobs)
            and len(self.transports) == 3
            and all(t.exhausted("gpus") and t.exhausted("jobs") and not t.pending for t in self.transports)
            and len(jobs) == 2
            and all(
                n.remote_last_seq is not None and n.last_seq >= n.remote_last_seq
                for j in jobs.values()
                for n in j.nodes.values()
            )
        )

    async def costs_steady(self, pilot: Pilot) -> None:
        """The cost board as the last data left it: computed in a worker, it may still change once
        after the data settled (a board from part of it); equal over three looks is its last."""
        seen: list[object] = []

        def steady() -> bool:
            seen.append(self.app.fleet.costs)
            return len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]

        for _ in range(100):
            if steady():
                return
            await pilot.pause(0.2)
        raise AssertionError("the cost board never settled")

    def view(self, tab: str) -> Callable[[Pilot], Awaitable[None]]:
        async def run_before(pilot: Pilot) -> None:
            await until(pilot, self.settled, "the replay to settle")
            await self.costs_steady(pilot)
            await redrawn(pilot, self.app)  # the throttled redraw after the last drain
            if tab == "jobs":
                await pilot.press("2")
                table = self.app.screen.query_one(JobsTable)
                await until(
                    pilot,
                    lambda: table.row_count == 2 and "trend" in [str(k.value) for k in table.columns],
                    "both rows with the trend column",
                )
                await redrawn(pilot, self.app)
            self.app.clear_notifications()
            await pilot.pause()

        return run_before


@pytest.fixture
def gpu_fleet(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> GpuFleet:
    return GpuFleet(monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("tab", ["fleet", "jobs"])
def test_wide_gpu_fleet(snap_compare: SnapCompare, gpu_fleet: GpuFleet, tab: str) -> None:
    assert snap_compare(gpu_fleet.app, terminal_size=WIDE, run_before=gpu_fleet.view(tab))
