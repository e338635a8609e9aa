"""Issue 36 finding 4: `s` then `y` typed 10 ms apart stopped a job on a busy machine. The dialog's
guard counts from when it was first shown, and a key read before that is no answer, however late the
loaded app hands it over. Both keys are stamped in one burst; the dialog's clock is injected."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual import _time, events

from tests.support.jobs import launch, wait_state
from tests.support.tui import select_a_job, sync, until
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient
from tui.screens import confirm
from tui.screens.confirm import ConfirmScreen

SLEEP = "import time; time.sleep(600)"


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _typed(key: str, at: float) -> events.Key:
    event = events.Key(key, key)
    event.time = at  # when the terminal's bytes were read
    return event


@pytest.mark.slow
@sync
async def test_a_y_typed_before_the_dialog_showed_is_no_answer(
    gpudeck_home: Path, client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = launch(client, workdir, [sys.executable, "-c", SLEEP], name="keeper")["id"]
    wait_state(client, job_id, {"running"})
    base = _time.get_time()
    clock = Clock(base + 0.05)  # the dialog shows 50 ms after the burst was read
    monkeypatch.setattr(confirm, "now", clock, raising=False)
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: job_id in app.fleet.jobs and app.fleet.jobs[job_id].active, "the job")
        await select_a_job(pilot, app)
        burst = [_typed("s", base), _typed("y", base + 0.01), _typed("y", base + 0.02)]
        for key in burst[:2]:  # s and y posted together: y reaches the dialog before it is shown
            key.set_sender(app)
            app.post_message(key)
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        dialog = app.screen
        await until(pilot, lambda: getattr(dialog, "shown_at", 0) is not None, "the question painted")
        clock.t = base + 10  # the guard has long passed on the dialog's clock
        await until(pilot, lambda: dialog.armed, "the dialog armed")
        burst[2].set_sender(app)
        app.post_message(burst[2])  # typed in the burst, handed over only now by a loaded app
        await pilot.pause(0.1)
        assert app.screen is dialog and app.fleet.jobs[job_id].active  # neither y answered
        await pilot.press("y")  # typed while the dialog is in sight: an answer
        await until(pilot, lambda: app.screen is not dialog, "the dialog answered")
        await until(pilot, lambda: app.fleet.jobs[job_id].ended, "the job stopped")
