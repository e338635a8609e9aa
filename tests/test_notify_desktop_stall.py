"""Issue 35: a stall of a job under the open TUI (the supervisor's `stalled` journal event, carried
into the fleet model) is one desktop notification and one toast per stall; its end (`unstalled`)
is none."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.jobs import launch
from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient

# A step, then nothing until the test says go (a stall), a step, nothing again (a second stall).
STALLS_TWICE = (
    "import os, time\n"
    "for n in (1, 2):\n"
    "    print(f'step={n} loss=0.5', flush=True)\n"
    "    while not os.path.exists(f'go{n}'):\n"
    "        time.sleep(0.05)\n"
)


@pytest.mark.slow  # a real job stalls twice under the open TUI: ~8 s
@pytest.mark.timeout(120)
@sync
async def test_each_stall_is_one_desktop_notice_and_its_end_none(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    app = GpuDeckApp()
    written: list[str] = []
    async with app.run_test(size=(120, 30)) as pilot:
        assert app._driver is not None
        write = app._driver.write
        app._driver.write = lambda data: (written.append(data), write(data))[-1]  # type: ignore[method-assign]

        def notices() -> list[str]:
            return [w for w in written if "\x1b]9;gpudeck: hangs-up stalled" in w]

        def stalled() -> str | None:
            job = app.fleet.jobs.get(job_id)
            return job.stalled if job is not None else None

        job_id = launch(
            client, workdir, [sys.executable, "-c", STALLS_TWICE], name="hangs-up", stall={"after": 1}
        )["id"]
        await until(pilot, lambda: stalled(), "the first stall in the fleet model", timeout=60)
        await until(pilot, lambda: notices(), "the first desktop notice")
        [first] = notices()
        assert "\x1b]9;gpudeck: hangs-up stalled: no step for" in first
        assert "\x1b]777;notify;gpudeck: hangs-up stalled;" in first

        (workdir / "go1").touch()  # progress again: unstalled, which is no notice
        await until(pilot, lambda: stalled() is None, "the job unstalled", timeout=60)
        await pilot.pause(0.3)
        assert len(notices()) == 1 and not any("unstalled" in w or "progress again" in w for w in written)

        await until(pilot, lambda: len(notices()) == 2, "the second stall's notice", timeout=60)
        assert sum("hangs-up stalled" in n.message for n in app._notifications) == 2
        (workdir / "go2").touch()
        await until(pilot, lambda: not app.fleet.jobs[job_id].active, "the job ended", timeout=60)
        assert len(notices()) == 2


def test_a_multi_node_stall_is_one_notice_and_a_new_stall_another() -> None:
    from tui.fleet.jobs import JobModel, NodeModel
    from tui.notify_desktop import StallNotices

    job = JobModel(id="j1", name="wide", state="running")
    job.nodes = {k: NodeModel(node=k, host=f"h{k}", state="running") for k in ("0", "1")}
    notices = StallNotices()
    assert notices.fresh([job]) == []
    for n in job.nodes.values():
        n.stalled = "no step for 40 s"
    assert [(j.id, why) for j, why in notices.fresh([job])] == [("j1", "no step for 40 s")]
    assert notices.fresh([job]) == []  # still the same stall
    for n in job.nodes.values():
        n.stalled = None  # unstalled: no notice
    assert notices.fresh([job]) == []
    job.nodes["1"].stalled = "no step for 90 s"
    assert [why for _, why in notices.fresh([job])] == ["no step for 90 s"]
