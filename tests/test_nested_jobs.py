"""Issue 29, finding 5: a gpudeck job launched from inside a gpudeck job is a job of its own: it gets
its own job key, and stopping the outer job neither kills it nor makes it `lost`."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import alive
from tests.support.node_journals import events, final, find_job, first_state, records
from tests.support.waiting import wait_for


@pytest.mark.slow  # two jobs and a stop: ~4 s
@pytest.mark.timeout(120)
def test_stopping_the_outer_job_leaves_a_job_it_launched_running(agent_dir: Path, workdir: Path) -> None:
    inner_cmd = shlex.join([sys.executable, "-m", "tui", "run", "--name", "inner", "--", "sleep", "300"])
    outer = gpudeck(
        "run", "--name", "outer", "--grace", "3", "--", "bash", "-c", f"{inner_cmd} && exec sleep 300",
        cwd=workdir,
    )  # fmt: skip
    assert outer.returncode == 0, outer.stderr
    inner = wait_for(lambda: find_job(agent_dir, "inner"), timeout=60, what="the inner job")
    wait_for(lambda: any(r.get("state") == "running" for r in records(agent_dir, inner)), timeout=30)
    supervisor = first_state(records(agent_dir, inner), "starting")["supervisor_pid"]
    command = first_state(records(agent_dir, inner), "running")["pid"]
    stop = gpudeck("stop", "outer", timeout=90)
    assert stop.returncode == 0, stop.stderr
    assert final(records(agent_dir, outer.stdout.strip()))["state"] == "stopped"
    assert alive(supervisor) and alive(command)
    recs = records(agent_dir, inner)
    assert final(recs) is None and not events(recs, "adopted"), recs[-3:]
    environ = Path(f"/proc/{supervisor}/environ").read_bytes().split(b"\0")
    assert not [v for v in environ if v.startswith(b"GPUDECK_JOB_KEY=")], (
        "the inner supervisor carries a job key"
    )
    kill = gpudeck("kill", "inner")
    assert kill.returncode == 0, kill.stderr
