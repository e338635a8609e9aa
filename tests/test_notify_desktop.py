"""Issue 35: `[notify] desktop`: a job of the open TUI that fails is shown as the terminal's own
notification (OSC 9 and OSC 777 escapes written to the terminal), beside the toast; off, nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.notify_desktop import escapes
from tui.remote.client import AgentClient

# fails when told (the file `go` in its workdir): a job that failed after a fixed sleep could end
# before a loaded machine's TUI had seen it run, and an end never seen running is history, not news
FAILS_SOON = [
    sys.executable,
    "-c",
    "import os, sys, time\nwhile not os.path.exists('go'): time.sleep(0.05)\nsys.exit(4)",
]


def test_escapes_carry_no_control_character_and_777_splits_on_semicolons() -> None:
    text = escapes("gpudeck: a;b failed", "exit\x1b]9;x\x07 4")
    assert text.startswith("\x1b]9;gpudeck: a;b failed: exit ]9;x  4\x07")
    assert text.endswith("\x1b]777;notify;gpudeck: a b failed;exit ]9 x  4\x07") and text.count("\x1b") == 2


async def _written_while_a_job_fails(client: AgentClient, workdir: Path) -> list[str]:
    app = GpuDeckApp()
    written: list[str] = []
    async with app.run_test(size=(120, 30)) as pilot:
        assert app._driver is not None
        write = app._driver.write
        app._driver.write = lambda data: (written.append(data), write(data))[-1]  # type: ignore[method-assign]
        told: list[str] = []  # every toast, kept past its timeout (for the failure's message)
        notify = app.notify
        app.notify = lambda message, *a, **k: (told.append(str(message)), notify(message, *a, **k))[-1]  # type: ignore[method-assign]
        # the first call's `go` would fail the second job at once, perhaps before it was seen running
        (workdir / "go").unlink(missing_ok=True)
        job = launch(client, workdir, FAILS_SOON, name="falls-over")["id"]
        await until(
            pilot, lambda: job in app.fleet.jobs and app.fleet.jobs[job].active, "the running job", 60
        )
        (workdir / "go").touch()
        wait_state(client, job, {"failed"})
        try:
            await until(
                pilot, lambda: any("falls-over failed" in n.message for n in app._notifications), "the toast"
            )
        except AssertionError:  # once in a full run (not reproduced): what the app knew then
            seen = app.fleet.jobs.get(job)
            raise AssertionError(
                f"no toast: fleet state {seen and seen.state}, endings shown loaded "
                f"{app.endings.shown is not None}, pending {[j.id for j in app.endings._pending]}, "
                f"told {job in (app.endings.shown or ())}, intake active {app.connections.intake.active}, "
                f"notifications {[n.message for n in app._notifications]}, told {told}, name {seen and seen.name}"
            ) from None
        await pilot.pause()
    return [w for w in written if "\x1b]9;" in w or "\x1b]777;" in w]


@pytest.mark.slow  # a real job fails under the open TUI: ~4 s
@sync
async def test_a_failure_under_the_open_tui_is_a_desktop_notification(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    [shown] = await _written_while_a_job_fails(client, workdir)
    assert (
        "\x1b]9;gpudeck: falls-over failed: " in shown
        and "\x1b]777;notify;gpudeck: falls-over failed;" in shown
    )

    (gpudeck_home / "config.toml").write_text("[notify]\ndesktop = false\n")
    assert await _written_while_a_job_fails(client, workdir) == []
