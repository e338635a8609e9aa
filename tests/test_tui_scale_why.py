"""`+`/`-` say at once why a job cannot be resized (issue 36, finding 9): greyed in the Footer, and
pressed, one line — no question first and a toast after, no silence on a one-node job."""

from __future__ import annotations

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.job import JobScreen


def said(app: GpuDeckApp, words: str) -> bool:
    return any(words in str(n.message) for n in app._notifications)


@sync
async def test_plus_and_minus_say_why_a_job_without_checkpoints_cannot_resize() -> None:
    app = GpuDeckApp(hosts=[], store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        job = {"id": "20261206-010000-aaaaaa", "name": "plain", "node": "0", "state": "running"}
        app.fleet.apply_jobs("local", [{**job, "argv": ["python", "train.py", "--lr", "3e-4"]}])
        await app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, job["id"]))
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        assert app.screen.check_action("scale", ("+1",)) is None  # greyed in the Footer
        await pilot.press("plus")
        await until(
            pilot, lambda: said(app, "plain cannot be resized: its command has no --checkpoint-dir"), "+"
        )
        assert not isinstance(app.screen, ConfirmScreen)  # nothing asked
        await pilot.press("minus")
        await until(pilot, lambda: said(app, "plain runs on one node: nothing to remove"), "-")
        assert isinstance(app.screen, JobScreen)


@sync
async def test_plus_on_a_job_that_checkpoints_still_asks() -> None:
    app = GpuDeckApp(hosts=[], store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        job = {"id": "20261206-010000-bbbbbb", "name": "ck", "node": "0", "state": "running"}
        app.fleet.apply_jobs("local", [{**job, "argv": ["python", "train.py", "--checkpoint-dir=ck"]}])
        await app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, job["id"]))
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        assert app.screen.check_action("scale", ("+1",)) is True
        assert app.screen.check_action("scale", ("-1",)) is None
