"""Driving the real app with Pilot: async tests without a plugin, condition waits, a training script."""

from __future__ import annotations

import asyncio
import functools
import shlex
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tui.app import GpuDeckApp
from tui.fleet import JobModel

# A job that prints a JSON loss line every 50 ms until stopped.
TRAIN = """\
import json, time
for step in range(1, 100000):
    print(json.dumps({"step": step, "loss": 2.0 / step, "total_steps": 100000}))
    time.sleep(0.05)
"""


@pytest.fixture
def script(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The command line of TRAIN, run from the work dir (the form's default workdir is the cwd)."""
    monkeypatch.chdir(workdir)
    path = workdir / "train.py"
    path.write_text(TRAIN)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test without an async pytest plugin (fixtures still resolve by name)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


async def until(pilot: Pilot, cond: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def redrawn(pilot: Pilot, app: GpuDeckApp) -> None:
    """Every change so far drawn: the throttle holds telemetry up to TELEMETRY_REDRAW (1 s), so a
    fixed pause is a race on a loaded machine. Polls that keep coming keep one pending, so a flush
    since the call will do too. Then the FleetChanged → FleetUpdated hops."""
    redraw = app.connections.redraw
    seen = redraw.flushes
    await until(pilot, lambda: not redraw.pending or redraw.flushes > seen, "the pending redraw")
    for _ in range(3):
        await pilot.pause()


def named(app: GpuDeckApp, name: str) -> list[JobModel]:
    return [j for j in app.fleet.jobs_sorted() if j.name == name]


async def select_a_job(pilot: Pilot, app: GpuDeckApp) -> None:
    """The jobs tab shown and a row under its cursor."""
    await pilot.press("2")
    await until(pilot, lambda: app.screen.current_job() is not None, "the row selected")  # type: ignore[attr-defined]


async def select_job(pilot: Pilot, app: GpuDeckApp, job_id: str) -> None:
    """The jobs tab shown with `job_id` under its cursor (a home whose only job it is)."""
    from tui.widgets.jobs_table import JobsTable

    await until(pilot, lambda: job_id in app.fleet.jobs, "the job")
    await pilot.press("2")
    table = app.screen.query_one(JobsTable)
    await until(pilot, lambda: table.selected_id == job_id, "the row")


async def open_a_job(pilot: Pilot, app: GpuDeckApp) -> None:
    """The selected job's view on top (after select_a_job)."""
    from tui.screens.job import JobScreen

    await select_a_job(pilot, app)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
