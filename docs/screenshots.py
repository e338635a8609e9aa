"""Regenerates the README's screenshots from the real app on this machine's `local` host:
    python docs/screenshots.py          # fleet, jobs and job views
    python docs/screenshots.py cloud    # the Cloud tab
It launches the demo trainer in a scratch GPUDECK_HOME, waits for points, and saves SVGs of the
fleet, jobs and job views (Textual's own export) into docs/. The Cloud tab is shot against the
local Aliyun test server (tests/support/aliyun.py) holding tests/support/cloud_demo.py's account:
no cloud account and no network needed."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))

SIZE = (160, 48)


async def shoot(workdir: Path) -> None:
    from remote_agent.names import new_job_id
    from tui.actions.options import form_options
    from tui.app import GpuDeckApp
    from tui.screens.job import JobScreen

    app = GpuDeckApp()
    async with app.run_test(size=SIZE) as pilot:

        async def until(cond, what: str, timeout: float = 600.0) -> None:  # torch starts slowly when busy
            for _ in range(int(timeout / 0.1)):
                if cond():
                    return
                await pilot.pause(0.1)
            raise SystemExit(f"timed out waiting for {what}")

        await until(lambda: app.fleet.hosts["local"].up, "local")
        job_id = new_job_id()
        app.job_control.launch(
            form_options("local", "python -m trainer --steps 600", name="resnet-demo", workdir=str(workdir)),
            job_id,
        )
        await until(
            lambda: (
                job_id in app.fleet.jobs
                and app.fleet.jobs[job_id].step
                and app.fleet.jobs[job_id].step >= 250
            ),
            "250 steps",
        )
        await pilot.press("1")
        await pilot.pause(0.5)
        app.save_screenshot("screenshot-fleet.svg", str(DOCS))
        await pilot.press("2")
        await pilot.pause(0.5)
        app.save_screenshot("screenshot-jobs.svg", str(DOCS))
        await app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, job_id))
        await pilot.pause(3.0)
        app.save_screenshot("screenshot.svg", str(DOCS))
        app.job_control.end(app.fleet.jobs[job_id], "kill")
        await until(lambda: not app.fleet.jobs[job_id].active, "the demo job killed")


async def shoot_cloud() -> None:
    import time

    import pytest
    from textual.widgets import DataTable

    from tests.support.aliyun import serving
    from tests.support.cloud_demo import SHOT_SIZE, fill
    from tui.app import GpuDeckApp
    from tui.settings import Settings

    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as server:
        now = time.time()
        fill(server.account, now)
        app = GpuDeckApp(hosts=[], store=None, settings=Settings())
        async with app.run_test(size=SHOT_SIZE) as pilot:
            await pilot.press("3")
            for _ in range(300):
                if app.screen.query_one("#cloud-table", DataTable).row_count == 4:
                    break
                await pilot.pause(0.1)
            await pilot.press("down")  # the idle one: its sources in the line below the table
            app.clear_notifications()
            await pilot.pause(0.5)
            app.save_screenshot("screenshot-cloud.svg", str(DOCS))


def main() -> None:
    if sys.argv[1:] == ["cloud"]:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["GPUDECK_HOME"] = str(Path(tmp) / "home")
            asyncio.run(shoot_cloud())
        print("saved: screenshot-cloud.svg")
        return
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GPUDECK_HOME"] = str(Path(tmp) / "home")
        workdir = Path(tmp) / "work"
        workdir.mkdir()
        asyncio.run(shoot(workdir))
    print("saved:", *sorted(p.name for p in DOCS.glob("screenshot*.svg")))


if __name__ == "__main__":
    main()
