"""`y` on a bigger-instance proposal in the TUI: the job restarts from its checkpoint on a host of that
type in its pool (the core `policy run` uses), where it restarts cleanly. A one-node job on `local`
(one fake NVML GPU at 95 % — the only fake), box-b (an sshd alias) priced as the next larger type."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.boxes import kill_boxes_jobs, two_boxes
from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome
from tests.support.tui import sync, until
from tests.support.waiting import wait_for
from tests.test_policy_launch import ok
from tests.test_policy_move import BIG, SMALL, busy_local_gpu, start_busy_job
from tui.app import GpuDeckApp
from tui.screens.job import JobScreen


@pytest.mark.slow
@pytest.mark.timeout(240)
@sync
async def test_y_on_a_bigger_type_moves_the_job_onto_that_host(
    ssh_home: SshHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_boxes(ssh_home)
    busy_local_gpu(monkeypatch)
    ok("hosts", "set", "local", "provider=aliyun", f"instance_type={SMALL}", "market=on-demand")
    ok("hosts", "set", "box-b", "provider=aliyun", f"instance_type={BIG}", "market=on-demand")
    (ssh_home.gpudeck_home / "policies.toml").write_text(
        '[pool.a100]\nhosts = ["local", "box-b"]\n\n'
        '[[rule]]\nname = "bigger"\nkind = "vertical"\npool = "a100"\nabove = 90\nfor = "0s"\n'
    )
    job = start_busy_job(tmp_path)
    app = GpuDeckApp(store=None)
    app.proposals.period = 0.2
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: job in app.fleet.proposals, "the bigger-type proposal", timeout=60)
            [d] = app.fleet.proposals[job]
            assert (d.kind, d.frm, d.to, d.inputs["restart"]) == ("vertical", SMALL, BIG, "clean"), d
            await until(
                pilot,
                lambda: app.fleet.hosts.get("box-b") is not None and app.fleet.hosts["box-b"].up,
                "box-b connected",
                timeout=60,
            )
            app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, job))
            await until(
                pilot,
                lambda: isinstance(app.screen, JobScreen) and app.screen.check_action("accept_proposal", ()),
                "the accept key",
            )
            await pilot.press("y")
            await until(
                pilot,
                lambda: any(
                    j.id != job
                    and j.name == "busy"
                    and j.active
                    and [n.host for n in j.nodes.values()] == ["box-b"]
                    for j in app.fleet.jobs.values()
                ),
                "the job on box-b",
                timeout=90,
            )
        moved = next(j for j in app.fleet.jobs.values() if j.id != job and j.name == "busy")
        wait_for(lambda: "resumed from step=5" in ok("logs", moved.id), what="the resumed line on box-b")
    finally:
        kill_boxes_jobs(ssh_home)
        kill_all_jobs(ssh_home.gpudeck_home / "local-agent")
