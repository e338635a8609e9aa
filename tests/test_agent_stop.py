"""Stopping: grace then SIGKILL, nothing of the tree left (torchrun workers included), lost jobs."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest

from remote_agent.jobstate import supervisor_alive
from tests.support.jobs import journal, launch, pids_with, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(120)
"""


def output(agent_dir: Path, job_id: str) -> str:
    return (agent_dir / "jobs" / job_id / "0" / "output.log").read_text()


@pytest.mark.slow
def test_a_job_ignoring_sigterm_is_killed_after_the_grace_period(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    marker = f"stubborn-{uuid.uuid4().hex}"
    job = launch(client, workdir, [sys.executable, "-c", STUBBORN, marker], grace=1.5)
    wait_for(lambda: "ready" in output(agent_dir, job["id"]), what="the job to ignore SIGTERM")
    start = time.monotonic()
    final = client.request("stop", job=job["id"], node="0", timeout=30)
    took = time.monotonic() - start
    assert final["state"] == "stopped" and final["signal"] == "SIGKILL"
    assert took >= 1.4, took  # the grace period was given
    assert pids_with(marker) == []


def test_a_cooperative_job_stops_at_once_with_its_exit(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    script = "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nprint('up', flush=True)\ntime.sleep(60)"
    job = launch(client, workdir, [sys.executable, "-c", script])
    wait_for(lambda: "up" in output(agent_dir, job["id"]), what="output")
    # A grace of an hour: the answer within the request's timeout means the stop ended with the job's
    # own exit, not with the grace period.
    final = client.request("stop", job=job["id"], node="0", grace=3600, timeout=60)
    assert final["state"] == "stopped" and final["exit_code"] == 0
    kinds = [(r["kind"], r.get("event")) for r in journal(agent_dir, job["id"])]
    assert ("event", "stop_requested") in kinds


@pytest.mark.slow
def test_children_that_leave_the_group_are_still_killed(client: AgentClient, workdir: Path) -> None:
    marker = f"escapee-{uuid.uuid4().hex}"
    # setsid + double fork: the grandchild leaves the job's session and its parent; the subreaper keeps it.
    script = f"setsid bash -c 'trap \"\" TERM; exec -a {marker} sleep 300' & sleep 300"
    job = launch(client, workdir, ["bash", "-c", script], grace=1)
    wait_for(lambda: pids_with(marker), what="the escapee")
    final = client.request("stop", job=job["id"], node="0")
    assert final["state"] == "stopped"
    assert pids_with(marker) == []


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("action", ["stop", "kill"])
def test_torchrun_leaves_no_worker_behind(
    client: AgentClient, workdir: Path, agent_dir: Path, action: str
) -> None:
    torchrun = shutil.which("torchrun") or pytest.skip("torchrun is not installed")
    marker = f"tr-worker-{uuid.uuid4().hex}"
    script = workdir / "worker.py"
    script.write_text(STUBBORN)
    job = launch(
        client,
        workdir,
        [torchrun, "--standalone", "--nproc-per-node=2", f"--log-dir={workdir}/tr", str(script), marker],
        grace=2,
    )
    # Two workers (plus torchrun, whose argv carries the marker too).
    wait_for(lambda: len(pids_with(marker)) >= 3, timeout=60, what="torchrun and its two workers")
    wait_for(
        lambda: output(agent_dir, job["id"]).count("ready") == 2,
        timeout=60,
        what="both workers ignoring SIGTERM",
    )
    final = client.request(action, job=job["id"], node="0", timeout=60)
    assert final["state"] == ("stopped" if action == "stop" else "killed")
    assert pids_with(marker) == []


def test_supervisor_killed_means_lost_and_kill_still_works(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    marker = f"orphan-{uuid.uuid4().hex}"
    job = launch(
        client,
        workdir,
        [
            sys.executable,
            "-c",
            "import time\nfor i in range(9999): print(f'step={i} loss=1', flush=True); time.sleep(0.01)",
            marker,
        ],
    )
    wait_for(lambda: pids_with(marker), what="the job")
    records = journal(agent_dir, job["id"])
    supervisor = next(r["supervisor_pid"] for r in records if r.get("state") == "starting")
    os.kill(supervisor, signal.SIGKILL)
    wait_for(
        lambda: not supervisor_alive(agent_dir / "jobs" / job["id"] / "0" / "lock"), what="its lock free"
    )
    # The look that finds it lost hands it to a new supervisor: it says what the journal says (#29, 14).
    assert wait_state(client, job["id"], {"running", "lost"})["state"] == "running"
    # The journal stays valid: every line complete JSON with gap-free seq.
    seqs = [r["seq"] for r in journal(agent_dir, job["id"])]
    assert seqs == list(range(1, len(seqs) + 1))
    assert pids_with(marker), "the command must outlive its supervisor"
    final = client.request("kill", job=job["id"], node="0")
    assert final["state"] == "killed"
    assert pids_with(marker) == []
    assert journal(agent_dir, job["id"])[-1]["state"] == "killed"


def test_stop_of_an_ended_job_answers_its_state(client: AgentClient, workdir: Path) -> None:
    job = launch(client, workdir, ["true"])
    wait_state(client, job["id"], {"exited"})
    assert client.request("stop", job=job["id"], node="0")["state"] == "exited"


def test_a_stop_says_who_asked(client: AgentClient, workdir: Path, agent_dir: Path) -> None:
    job = launch(client, workdir, ["sleep", "60"])
    wait_state(client, job["id"], {"running"})
    with pytest.raises(Exception, match="reason: expected up to 200 printable"):
        client.request("stop", job=job["id"], node="0", reason="bad\nreason")
    final = client.request("stop", job=job["id"], node="0", reason="fleet daily budget reached")
    assert final["state"] == "stopped" and final["reason"] == "fleet daily budget reached"
