"""Issue 35: a stall, judged by the job's supervisor, is told from the host to the job's json://
target as an end is (no gpudeck process needed), once, with why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import journal
from tests.support.receiver import PostReceiver
from tests.support.waiting import wait_for

SPINS = "print('step=1 loss=0.5', flush=True)\nwhile True:\n    sum(range(10000))\n"


@pytest.mark.slow  # a real job that hangs for its stall limit
@pytest.mark.timeout(90)
def test_a_stall_reaches_a_json_receiver_from_the_host(
    gpudeck_home: Path, agent_dir: Path, workdir: Path
) -> None:
    receiver = PostReceiver()
    (gpudeck_home / "config.toml").write_text(
        f'[notify]\nurls = ["json://127.0.0.1:{receiver.port}/stall"]\nevents = ["stalled"]\n'
    )
    job = gpudeck("run", "--name", "hangs", "--stall", "2s", "--", sys.executable, "-c", SPINS, cwd=workdir)
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip()
    try:
        wait_for(lambda: receiver.got, timeout=60, interval=0.2, what="the stall message")
        [(path, body)] = receiver.got
        message = json.loads(body)
        assert path == "/stall" and message["event"] == "stalled" and message["job"] == job_id
        assert message["why"].startswith("no step for") and f"gpudeck inspect {job_id}" in message["text"]
        [said] = [r for r in journal(agent_dir, job_id) if r.get("event") == "notified"]
        assert said["data"] == {"event": "stalled", "sent": 1, "failed": []}
    finally:
        gpudeck("kill", job_id, cwd=workdir)
        receiver.close()
