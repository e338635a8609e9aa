"""Issue 29, finding 4: the controller journals a resize's intent before it acts, so a controller
SIGKILLed mid-resize (the old job stopping, nothing relaunched yet) is resumed by the next one: the
job runs again at the decided size, and the journal says it was resumed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.node_journals import events, final, records
from tests.support.waiting import wait_for
from tests.test_policy_cli import journal, write_policies
from tests.test_scale import job_json, ok


@pytest.mark.slow  # a job, a stop that waits its grace, a relaunch: ~15 s
@pytest.mark.timeout(180)
def test_a_controller_killed_mid_resize_is_resumed_by_the_next_one(
    gpudeck_home: Path, agent_dir: Path, workdir: Path
) -> None:
    write_policies(
        gpudeck_home,
        '[[rule]]\nname = "drain"\nkind = "metric"\njobs = "yolo*"\nmetric = "backlog"\n'
        'below = 100\nadd = -1\ncooldown = "1h"\n',
    )
    (workdir / "ck").mkdir()
    # SIGTERM is ignored: the resize's stop waits the whole grace, the window the controller dies in
    script = "trap '' TERM; echo backlog=0; while true; do sleep 0.2; done"
    job = ok(
        "run", "--name", "yolo-r", "--grace", "4", "--nodes", "2", "--launcher", "none",
        "--", "bash", "-c", script, "x", "--checkpoint-dir", "ck",
        cwd=workdir,
    ).strip()  # fmt: skip
    wait_for(lambda: "backlog=0" in (agent_dir / "jobs" / job / "0" / "output.log").read_text(), timeout=30)
    controller = subprocess.Popen(
        [sys.executable, "-m", "tui", "policy", "run", "--interval", "0.5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # both nodes asked (the stop goes to each at once): killed between the two, node 1 would
        # run on, and the wait below for both nodes' ends could not be met
        wait_for(
            lambda: all(events(records(agent_dir, job, node), "stop_requested") for node in ("0", "1")),
            timeout=60,
            what="the resize's stop on both nodes",
        )
    finally:
        os.killpg(controller.pid, signal.SIGKILL)
        controller.wait(timeout=30)
    wait_for(lambda: final(records(agent_dir, job, "1")) and final(records(agent_dir, job)), timeout=30)
    assert not [r for r in journal(gpudeck_home) if r["outcome"] == "applied"]
    ok("policy", "run", "--once", timeout=120)
    done = [r for r in journal(gpudeck_home) if r["outcome"] == "applied"]
    assert len(done) == 1 and done[0]["resumed"] is True, journal(gpudeck_home)
    intent = next(r for r in journal(gpudeck_home) if r["outcome"] == "intent")
    assert intent["intent_id"] == done[0]["new_job"] and intent["t"] <= done[0]["t"]
    new = job_json(done[0]["new_job"])
    assert new["state"] in ("starting", "running") and len(new["nodes"]) == 1, new
    assert new["resized_from"]["job"] == job
    ok("kill", done[0]["new_job"])
