"""Stops keep every printed byte (#29, finding 1 and 14): whatever ends a job -- a stop while its
supervisor is frozen, a kill -- the output printed before the end is parsed and journaled, and a
frozen supervisor is taken over like a dead one, found by the age of its last record."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.jobs import job, journal, launch, pids_with
from tests.support.waiting import wait_for
from tests.test_agent_adoption import PRINTER, adopted, kill_supervisor, out_size, steps
from tui.remote.client import AgentClient


def printed_steps(agent_dir: Path, job_id: str) -> int:
    return (agent_dir / "jobs" / job_id / "0" / "output.log").read_text().count("step=")


def frozen_supervisor(agent_dir: Path, job_id: str) -> int:
    """SIGSTOP the job's supervisor once a heartbeat says where parsing got to; then let the job
    print 100 more lines that only a takeover can journal."""
    wait_for(
        lambda: [r for r in journal(agent_dir, job_id) if r.get("output_offset")],
        what="a heartbeat with an offset",
    )
    supervisor = next(r["supervisor_pid"] for r in journal(agent_dir, job_id) if r.get("state") == "starting")
    os.kill(supervisor, signal.SIGSTOP)
    size = out_size(agent_dir, job_id)
    wait_for(lambda: out_size(agent_dir, job_id) > size + 2000, timeout=30, what="output after the freeze")
    return supervisor


@pytest.mark.slow
@pytest.mark.parametrize("action", ["stop", "kill"])
def test_a_stop_with_a_frozen_supervisor_journals_every_printed_line(
    client: AgentClient, workdir: Path, agent_dir: Path, action: str
) -> None:
    marker = f"frozen-stop-{uuid.uuid4().hex}"
    job_ = launch(client, workdir, [sys.executable, "-c", PRINTER, marker], heartbeat_interval=0.2)
    supervisor = frozen_supervisor(agent_dir, job_["id"])
    try:
        final = client.request(
            action, job=job_["id"], node="0", timeout=60, **({"grace": 5} if action == "stop" else {})
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(supervisor, signal.SIGCONT)
    assert final["state"] == ("stopped" if action == "stop" else "killed")
    assert pids_with(marker) == []
    records = journal(agent_dir, job_["id"])
    assert records[-1]["kind"] == "state" and records[-1]["state"] == final["state"]
    # Every line printed, before and during the freeze, is one metric point: none lost, none doubled.
    assert steps(agent_dir, job_["id"]) == list(range(printed_steps(agent_dir, job_["id"])))


@pytest.mark.slow
def test_a_frozen_supervisor_is_taken_over_by_the_next_look(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    marker = f"frozen-look-{uuid.uuid4().hex}"
    go = workdir / "go"
    job_ = launch(client, workdir, [sys.executable, "-c", PRINTER, marker, str(go)], heartbeat_interval=0.2)
    supervisor = frozen_supervisor(agent_dir, job_["id"])
    try:
        # Its node would lag silently: the next listing sees its journal silent for many heartbeats.
        wait_for(
            lambda: job(client, job_["id"]) and adopted(agent_dir, job_["id"]),
            timeout=30,
            what="the frozen supervisor taken over",
        )
        assert "frozen" in adopted(agent_dir, job_["id"])[0]["data"]["why"]
        assert adopted(agent_dir, job_["id"])[0]["data"]["previous_supervisor_pid"] == supervisor
        go.touch()
        wait_for(
            lambda: job(client, job_["id"])["state"] == "exited",
            timeout=30,
            what="the end, journaled by the adopter",
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(supervisor, signal.SIGCONT)
    assert steps(agent_dir, job_["id"]) == list(range(printed_steps(agent_dir, job_["id"])))


def test_ps_does_not_say_lost_on_the_look_that_adopts(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    marker = f"adopt-look-{uuid.uuid4().hex}"
    job_ = launch(client, workdir, [sys.executable, "-c", PRINTER, marker], heartbeat_interval=0.2)
    kill_supervisor(agent_dir, job_["id"])
    seen = job(client, job_["id"])  # the look that finds it lost hands it to a new supervisor
    assert seen["state"] == "running", seen
    wait_for(lambda: adopted(agent_dir, job_["id"]), what="the adopted record")
    client.request("kill", job=job_["id"], node="0", timeout=30)
