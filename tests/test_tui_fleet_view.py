"""The fleet view with GPUs: the real local agent on a faked NVML (hardware is the one thing
faked) shows per-GPU bars with numbers, temperature, power, processes and the header's count;
the renderers pick the theme's level colours; the modals for SSH host keys behave."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest
from textual.widgets import Button

from tests.support.tui import redrawn
from tui.app import GpuDeckApp
from tui.fleet import Fleet
from tui.messages import HostKeyChangedNotice
from tui.screens.hostkey import HostKeyScreen
from tui.widgets.gauges import HOT_C, bar, power, temperature
from tui.widgets.host_panel import render_host

FAKE_NVML = Path(__file__).resolve().parent / "fakes" / "nvml"
GIB = 1024**3


def test_bars_take_the_level_colour_from_the_theme() -> None:
    def styles(pct: float) -> set[str]:
        return {str(span.style) for span in bar(pct, 10).spans}

    assert "$gpu-idle" in styles(5) and "$gpu-moderate" in styles(50) and "$gpu-busy" in styles(90)
    assert bar(None, 6).plain == "······"
    assert len(bar(37, 10).plain) == 10 and len(bar(100, 10).plain) == 10


def test_hot_is_from_the_threshold_up_and_power_over_is_past_the_limit() -> None:
    def hot(c: float) -> bool:
        return any("$gpu-hot" in str(span.style) for span in temperature(c).spans)

    def over(w: float) -> bool:
        return any("$power-over" in str(span.style) for span in power(w, 300.0).spans)

    assert hot(HOT_C) and not hot(HOT_C - 1) and not hot(None)
    assert over(301) and not over(300) and not over(299)


def test_a_host_says_how_stale_its_data_is() -> None:
    now = [1000.0]
    fleet = Fleet(clock=lambda: now[0])
    fleet.apply_gpus(
        "box",
        {
            "available": False,
            "reason": "no NVIDIA GPU: driver not loaded",
            "gpus": [],
            "cpu": {"util": 12.0, "load": [0.5, 0.4, 0.3]},
            "ram": {"total_mib": 8192, "used_mib": 2048},
        },
    )
    fleet.set_host_status("box", "reconnecting", "no answer to gpus within 10 s")
    now[0] += 42
    text = render_host(fleet.hosts["box"], fleet, now[0], 100).plain
    assert "reconnecting: no answer to gpus within 10 s" in text and "data 42s old" in text
    assert "no NVIDIA GPU: driver not loaded" in text and "2.0/8.0 GiB" in text and " 12%" in text


async def _fleet_with_gpus() -> tuple[str, str]:
    app = GpuDeckApp()
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(300):
            host = app.fleet.hosts.get("local")
            if host is not None and len(host.gpus) == 2 and len(host.util_series.get(0, [])) >= 2:
                break
            await pilot.pause(0.05)
        await redrawn(pilot, app)
        panel = app.screen.query_one("#host-local")
        return str(panel.render()), str(app.screen.query_one("#summary").render())


@pytest.mark.slow
def test_fleet_view_shows_each_gpu(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [
        {
            "uuid": "GPU-aaaa",
            "util": 93,
            "mem_used": 61 * GIB,
            "temp": 71,
            "power_mw": 312_000,
            "compute": [[os.getpid(), 60 * GIB]],
        },
        {"uuid": "GPU-bbbb", "util": 3, "mem_used": 1 * GIB, "temp": 34},
    ]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_NVML), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYNVML_FAKE", json.dumps(gpus))
    panel, summary = asyncio.run(_fleet_with_gpus())
    lines = panel.splitlines()
    gpu0 = next(line for line in lines if line.startswith("  0 "))
    assert (
        "A100" in gpu0 and " 93%" in gpu0 and "61.0/80.0G" in gpu0 and "71°C" in gpu0 and "312/400W" in gpu0
    )
    gpu1 = next(line for line in lines if line.startswith("  1 "))
    assert "  3%" in gpu1 and "34°C" in gpu1
    assert f"{os.getpid()} " in panel and "60.0G" in panel  # the process on GPU 0, with its memory
    assert "GPUs 1/2 busy" in summary and "burn — $/h" in summary


class _Key:
    """Just what the modal reads of a paramiko key."""

    def get_name(self) -> str:
        return "ssh-ed25519"

    def asbytes(self) -> bytes:
        return b"not really a key"


class _Changed(Exception):
    def __init__(self) -> None:
        super().__init__("HOST KEY FOR gpu-box HAS CHANGED")
        self.key = _Key()


async def _host_keys() -> tuple[list[str], bool | None, list[str], bool]:
    app = GpuDeckApp(hosts=["local"])
    async with app.run_test(size=(100, 30)) as pilot:
        answer: list[bool] = []
        # SSH asks from a connect worker's thread; the modal shows and that thread waits.
        asker = threading.Thread(target=lambda: answer.append(app._confirm_key("gpu-box", _Key())))
        asker.start()
        for _ in range(100):
            if isinstance(app.screen, HostKeyScreen) and app.screen.query(Button):
                break
            await pilot.pause(0.05)
        unknown = [str(b.id) for b in app.screen.query("Button")]
        app.screen.query_one("#accept", Button).press()
        for _ in range(100):
            if answer:
                break
            await pilot.pause(0.05)
        asker.join(5)
        app.post_message(HostKeyChangedNotice("gpu-box", _Changed()))
        for _ in range(100):
            if isinstance(app.screen, HostKeyScreen) and app.screen.query(Button):
                break
            await pilot.pause(0.05)
        changed = [str(b.id) for b in app.screen.query("Button")]
        await pilot.press("escape")
        await pilot.pause(0.1)
        back = not isinstance(app.screen, HostKeyScreen)
    return unknown, answer[0] if answer else None, changed, back


@pytest.mark.slow
def test_host_key_modal_accepts_unknown_and_never_a_changed_key(gpudeck_home: Path) -> None:
    unknown, accepted, changed, back = asyncio.run(_host_keys())
    assert unknown == ["accept", "reject"] and accepted is True
    assert changed == ["reject"] and back  # a changed key: explained, closable, never acceptable
