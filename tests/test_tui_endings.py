""" "job ended" notices are told once, ever: state.db remembers what was shown, so restarting the TUI
repeats none, and a job that ended while the TUI was closed is told once at the next start.
The real app, a real state.db in GPUDECK_HOME, real jobs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient

SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]
QUICK = [sys.executable, "-c", "print('done')"]


def ended_notices(app: GpuDeckApp) -> list[str]:
    return [n.message for n in app._notifications if n.title == "job ended"]


def settled(app: GpuDeckApp, ids: set[str]) -> bool:
    """The app has read state.db and looked at every one of these (ended) jobs."""
    endings = app.endings
    return endings.shown is not None and ids <= endings._considered | endings.shown


async def run_app(ids: set[str], also: object = None) -> list[str]:
    app = GpuDeckApp()
    async with app.run_test(size=(120, 30)) as pilot:
        await until(
            pilot,
            lambda: ids <= set(app.fleet.jobs) and all(app.fleet.jobs[i].ended for i in ids),
            "the jobs",
        )
        await until(pilot, lambda: settled(app, ids), "the endings looked at")
        if callable(also):
            await also(app, pilot)
        await pilot.pause()
        return ended_notices(app)


@pytest.mark.slow
@sync
async def test_each_ending_is_told_once_across_restarts(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    old = launch(client, workdir, QUICK, name="before-any-tui")["id"]
    wait_state(client, old, {"exited"})
    live = launch(client, workdir, SLEEP, name="watched-ending")["id"]
    wait_state(client, live, {"running"})

    async def stop_while_open(app: GpuDeckApp, pilot) -> None:  # type: ignore[no-untyped-def]
        client.request("stop", job=live, node="0", grace=5, timeout=60)
        await until(
            pilot, lambda: any("watched-ending" in n for n in ended_notices(app)), "the live ending told"
        )

    app = GpuDeckApp()
    async with app.run_test(size=(120, 30)) as pilot:  # the first TUI ever: old history is not news
        await until(pilot, lambda: live in app.fleet.jobs and app.fleet.jobs[live].active, "the running job")
        await until(pilot, lambda: settled(app, {old}), "the old ending looked at")
        await stop_while_open(app, pilot)
        first = ended_notices(app)
    assert [n for n in first if "watched-ending" in n] == [first[-1]] and not [
        n for n in first if "before-any" in n
    ]

    away = launch(client, workdir, QUICK, name="ended-while-closed")["id"]  # no TUI is open
    wait_state(client, away, {"exited"})

    second = await run_app({old, live, away})
    assert [n for n in second if "ended-while-closed" in n] and len(second) == 1, second

    third = await run_app({old, live, away})
    assert third == []  # nothing repeats
