"""Issue 14's done-when, as a user does it: the reference trainer on 2 SSH hosts, `+` in the TUI's
job view → world size 3 with the loss curve going on, `-` → world size 2, `s` → stopped, and no
process of any of its jobs left on either host."""

from __future__ import annotations

from pathlib import Path

import pytest

from remote_agent.supervision.proctree import marked_processes
from tests.support.boxes import BOXES, agent_dir, kill_boxes_jobs, two_boxes
from tests.support.cleanup import job_keys
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import TINY, ok
from tests.support.tui import select_job, sync, until
from tui.app import GpuDeckApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.job import JobScreen
from tui.widgets.charts import LossChart


async def resize(pilot, app: GpuDeckApp, key: str, world: int) -> str:  # noqa: ANN001 - a Pilot
    """Press `key` (plus/minus) in the job view, confirm, and wait for the view on the resized job
    training at `world` ranks; its id."""
    before = app.screen.job_id
    await pilot.press(key)
    await until(
        pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the question, armed"
    )
    await pilot.press("y")
    await until(
        pilot,
        lambda: isinstance(app.screen, JobScreen) and app.screen.job_id != before,
        "the view on the resized job",
        timeout=240,
    )
    new = app.fleet.jobs[app.screen.job_id]
    # the trainer says the new world size when it resumes (`world_size_changed`), then trains on
    await until(
        pilot,
        lambda: (
            any(e.name == "world_size_changed" and e.data.get("world_size") == world for e in new.events)
            and len(new.series.get("loss") or ()) >= 2
        ),
        f"steps at world size {world}",
        timeout=240,
    )
    return new.id


def continuous(app: GpuDeckApp) -> list[float]:
    """The loss chart's steps, ancestors first (one series across the resizes)."""
    view = app.screen
    assert isinstance(view, JobScreen)
    job = app.fleet.jobs[view.job_id]
    return [x for x, _ in view.query_one(LossChart).chained(job, view.chain(), "loss")]


def increasing(steps: list[float]) -> bool:
    """One curve: each step after the last (the chart cuts an ancestor where its successor resumed)."""
    return len(steps) >= 4 and all(a < b for a, b in zip(steps[:-1], steps[1:], strict=True))


@pytest.mark.slow
@pytest.mark.timeout(900)
@sync
async def test_plus_minus_and_stop_on_the_reference_trainer_across_two_hosts(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    two_boxes(ssh_home)
    try:
        job = ok(
            "run",
            "--name",
            "ref",
            "--grace",
            "30",
            "--nodes",
            "2",
            "--pool",
            "box-a,box-b",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(free_port()),
            "--",
            "python3",
            "-m",
            "trainer",
            "--steps",
            "100000",
            *TINY,
            "--checkpoint-dir",
            str(tmp_path / "ck"),
            cwd=tmp_path,
            timeout=180,
        ).strip()
        app = GpuDeckApp(store=None)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(
                pilot,
                lambda: (
                    job in app.fleet.jobs
                    and len(app.fleet.jobs[job].nodes) == 2
                    and len(app.fleet.jobs[job].series.get("loss") or ()) >= 2
                ),
                "the 2-node job training",
                timeout=240,
            )
            await select_job(pilot, app, job)
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")

            three = await resize(pilot, app, "plus", 3)
            assert {n.host for n in app.fleet.jobs[three].nodes.values()} == {"box-a", "box-b"}
            before = continuous(app)
            assert increasing(before) and before[-1] > max(
                x for x, _ in app.fleet.jobs[job].series["loss"].points()
            )

            two = await resize(pilot, app, "minus", 2)
            steps = continuous(app)
            assert increasing(steps) and steps[-1] > before[-1]  # the same curve, going on
            assert [a.id for a in app.screen.chain()] == [job, three]

            await pilot.press("s")
            await until(
                pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "stop, armed"
            )
            await pilot.press("y")
            await until(pilot, lambda: app.fleet.jobs[two].state == "stopped", "the job stopped", timeout=120)
        # nothing left anywhere: no supervisor or process carrying any of the chain's job keys
        keys = [key for box in BOXES for key in job_keys(agent_dir(ssh_home, box))]
        assert {key.split("/")[0] for key in keys} == {job, three, two}
        assert {key: marked_processes(key) for key in keys} == {key: set() for key in keys}
    finally:
        kill_boxes_jobs(ssh_home)
