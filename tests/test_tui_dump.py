"""`D` in the job view (issue 34): the job's latest saved stacks in a scrollable dialog, asked in a
worker; none saved is said; `n` takes a new dump on every node and shows it; read-only refuses `n`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.widgets import Label, Static

from tests.support.jobs import launch, wait_state
from tests.support.tui import open_a_job, sync, until
from tests.test_dump import FUNCTION, SPINS
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient
from tui.screens.dump_view import DumpScreen
from tui.screens.job import JobScreen


def status(app: GpuDeckApp) -> str:
    return str(app.screen.query_one("#dump-status", Label).render())


def shown(app: GpuDeckApp) -> str:
    return str(app.screen.query_one("#dump-text", Static).render())


@pytest.mark.slow  # the app with its agent and a real job: seconds
@sync
async def test_D_shows_the_saved_stacks_and_n_takes_new_ones(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job = launch(client, workdir, [sys.executable, "-c", SPINS], name="spins")
    wait_state(client, job["id"], {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_a_job(pilot, app)
        await pilot.press("D")
        await until(pilot, lambda: isinstance(app.screen, DumpScreen), "the dump dialog")
        await until(pilot, lambda: "no dump saved" in shown(app), "none saved, said")
        assert "0 of 1 node with a dump" in status(app)
        await pilot.press("n")
        await until(pilot, lambda: FUNCTION in shown(app), "the new dump's stacks", timeout=60)
        assert "1 of 1 node with a dump" in status(app) and "=== no rank · pid" in shown(app)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "back in the job view")
        await pilot.press("D")  # the saved one, read again
        await until(
            pilot, lambda: isinstance(app.screen, DumpScreen) and FUNCTION in shown(app), "the saved dump"
        )
    client.request("kill", job=job["id"], node="0", timeout=30)


@pytest.mark.slow
@sync
async def test_read_only_refuses_a_new_dump(
    gpudeck_home: Path, agent_dir: Path, client: AgentClient, workdir: Path
) -> None:
    job = launch(client, workdir, [sys.executable, "-c", SPINS], name="spins")
    wait_state(client, job["id"], {"running"})
    app = GpuDeckApp(store=None, read_only=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_a_job(pilot, app)
        await pilot.press("D")
        await until(pilot, lambda: isinstance(app.screen, DumpScreen) and "node" in status(app), "the dialog")
        before = status(app)
        await pilot.press("n")  # refused at once, before any worker: the dialog still says the same
        await pilot.pause()
        assert status(app) == before and "0 of 1 node with a dump" in before
        assert not (agent_dir / "jobs" / job["id"] / "0" / "dumps").exists()
    client.request("kill", job=job["id"], node="0", timeout=30)
