"""The feed under load and under failure: a flood of journal events is drawn at most ~10 times a
second with nothing lost, and a host that cannot be reached is shown as such without a crash."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from tests.support.tui import redrawn
from tui.app import GpuDeckApp
from tui.live.inbox import Update
from tui.remote.transport import LocalTransport, Transport

JOB = "20261129-120000-abcdef"


async def _flood() -> tuple[int, float, int]:
    app = GpuDeckApp()
    published = []
    async with app.run_test(size=(120, 40)) as pilot:
        feed = app.connections
        flush = feed.redraw._flush

        def counting_flush() -> None:
            published.append(time.monotonic())
            flush()

        feed.redraw._flush = counting_flush  # type: ignore[method-assign]
        total = 3000

        def produce() -> None:  # a reader thread delivering 3000 one-record batches in ~1 s
            for seq in range(1, total + 1):
                rec = {
                    "seq": seq,
                    "t": 1000.0 + seq,
                    "kind": "metric",
                    "values": {"step": seq, "loss": 1.0 / seq},
                }
                feed.inbox.put(Update("events", "local", [rec], JOB, "0"))
                if seq % 30 == 0:
                    time.sleep(0.01)

        start = time.monotonic()
        thread = threading.Thread(target=produce)
        thread.start()
        while thread.is_alive() or len(feed.inbox):
            await pilot.pause(0.02)
        elapsed = time.monotonic() - start
        await pilot.pause(0.3)
        points = app.fleet.jobs[JOB].series["loss"].count
        redraws = sum(1 for t in published if start <= t <= start + elapsed)
    return redraws, elapsed, points


@pytest.mark.slow
def test_event_flood_coalesces_to_ten_redraws_a_second(gpudeck_home: Path) -> None:
    redraws, elapsed, points = asyncio.run(_flood())
    assert points == 3000  # every event applied
    assert redraws <= 10 * elapsed + 3, (redraws, elapsed)


class Unreachable(Transport):
    host = "gpu-box"

    def open(self) -> None:
        from tui.remote.transport import TransportError

        raise TransportError("ssh: connect to host gpu-box port 22: Connection refused")

    def readline(self) -> bytes:
        return b""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


async def _down_host(agent_dir: Path) -> tuple[str, str | None, str]:
    def transport(host: str) -> Transport:
        return Unreachable() if host == "gpu-box" else LocalTransport(agent_dir)

    app = GpuDeckApp(hosts=["local", "gpu-box"], transport=transport)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(200):
            box = app.fleet.hosts.get("gpu-box")
            if box is not None and box.status == "unreachable" and app.fleet.hosts["local"].up:
                break
            await pilot.pause(0.05)
        box = app.fleet.hosts["gpu-box"]
        await redrawn(pilot, app)
        return box.status, box.reason, app.export_screenshot()


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_an_unreachable_host_says_why(gpudeck_home: Path, agent_dir: Path) -> None:
    status, reason, svg = asyncio.run(_down_host(agent_dir))
    assert status == "unreachable" and reason and "Connection refused" in reason
    assert "unreachable" in svg and "gpu-box" in svg and "local" in svg
