"""The trainer launched, watched, stopped and restarted through the real `gpudeck` CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# Slow as a whole: the trainer under a real agent, stopped and resumed.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

from tests.conftest import gpudeck  # noqa: E402
from tests.support.waiting import wait_for  # noqa: E402


def steps_seen(job: str, cwd: Path) -> list[int]:
    out = gpudeck("metrics", "--json", job, cwd=cwd).stdout
    return [p["values"]["step"] for p in map(json.loads, out.splitlines()) if "step" in p.get("values", {})]


def output(job: str, cwd: Path) -> list[dict]:
    return [json.loads(line) for line in gpudeck("logs", job, cwd=cwd).stdout.splitlines()]


@pytest.mark.timeout(120)
def test_gpudeck_stop_checkpoints_with_workers_and_restart_resumes(gpudeck_home: Path, workdir: Path) -> None:
    cmd = [sys.executable, "-m", "trainer", "--steps", "100000", "--workers", "2", "--checkpoint-dir", "ck"]
    job = gpudeck(
        "run", "--name", "tr", "--grace", "30", "--env", "OMP_NUM_THREADS=1", "--", *cmd, cwd=workdir
    )
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip()
    wait_for(lambda: max(steps_seen(job_id, workdir), default=0) >= 5, timeout=60, what="5 steps in gpudeck")

    stop = gpudeck("stop", "tr", cwd=workdir)
    assert stop.returncode == 0 and stop.stdout.startswith(f"{job_id} stopped in "), stop
    assert float(stop.stdout.split(" in ")[1].rstrip("s\n")) < 10  # well inside the 30 s grace
    (info,) = json.loads(gpudeck("ps", "--json", "--all", cwd=workdir).stdout)
    assert (info["state"], info["exit_code"], info["signal"]) == ("stopped", 0, None)

    lines = output(job_id, workdir)
    last = max(o["step"] for o in lines if "loss" in o)
    saved = [o for o in lines if o.get("event") == "checkpoint_saved"]
    assert [(s["step"], s["reason"]) for s in saved] == [(last, "signal")]
    assert (workdir / "ck" / f"ckpt-{last:08d}.pt").exists()
    assert torch.load(workdir / "ck" / f"ckpt-{last:08d}.pt", weights_only=True)["step"] == last

    again = gpudeck("restart", "tr", cwd=workdir)
    assert again.returncode == 0, again.stderr
    new_id = again.stdout.strip()
    wait_for(lambda: max(steps_seen(new_id, workdir), default=0) > last, timeout=60, what="the resumed steps")
    assert gpudeck("stop", new_id, cwd=workdir).returncode == 0
    resumed = output(new_id, workdir)
    assert resumed[0]["event"] == "resumed" and resumed[0]["step"] == last
    assert min(o["step"] for o in resumed if "loss" in o) == last + 1  # nothing lost beyond the last step
