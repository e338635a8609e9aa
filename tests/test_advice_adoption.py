"""An adopted job's advice is not said twice: the adopter re-reads output its lost supervisor had
already parsed (from the last heartbeat's offset, here the start) and knows the kinds the journal
holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from remote_agent.jobstate import supervisor_alive
from tests.support.jobs import journal
from tests.support.waiting import wait_for

# An OOM message, then waiting for the test's go (the job outlives its first supervisor).
SCRIPT = (
    "import os, sys, time\n"
    "print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', flush=True)\n"
    "while not os.path.exists(sys.argv[1]):\n    time.sleep(0.05)\n"
)


def advice(agent_dir: Path, job_id: str) -> list[dict]:
    return [r for r in journal(agent_dir, job_id) if r.get("event") == "advice"]


@pytest.mark.slow  # a supervisor killed and a job adopted: ~5 s
@pytest.mark.timeout(120)
def test_an_adopter_does_not_say_the_advice_again(gpudeck_home: Path, workdir: Path) -> None:
    agent_dir = gpudeck_home / "local-agent"
    go = workdir / "go"
    run = subprocess.run(
        [sys.executable, "-m", "tui", "run", "--", sys.executable, "-c", SCRIPT, str(go)],
        capture_output=True, text=True, cwd=workdir, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    wait_for(lambda: advice(agent_dir, job_id), what="the advice")
    supervisor = next(r["supervisor_pid"] for r in journal(agent_dir, job_id) if r.get("state") == "starting")
    os.kill(supervisor, signal.SIGKILL)
    lock = agent_dir / "jobs" / job_id / "0" / "lock"
    wait_for(lambda: not supervisor_alive(lock), timeout=60, what="the lock free")
    subprocess.run(
        [sys.executable, "-m", "tui", "ps"], cwd=workdir, timeout=60, capture_output=True
    )  # adopts
    wait_for(
        lambda: [r for r in journal(agent_dir, job_id) if r.get("event") == "adopted"],
        timeout=60,
        what="the adoption",
    )
    go.touch()
    wait_for(
        lambda: [r for r in journal(agent_dir, job_id) if r.get("state") == "exited"],
        timeout=60,
        what="the end",
    )
    assert [a["data"]["kind"] for a in advice(agent_dir, job_id)] == ["oom"]
