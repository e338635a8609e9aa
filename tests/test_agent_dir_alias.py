"""Issue 29, finding 14: the agent knew a job's supervisor by its dir's spelling, so a stop through a
second path of the same agent dir (a symlink, a second mount of the same home) did not find it: a
frozen supervisor was never taken over, and the stop waited out grace + 30 s and failed."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from tests.support.jobs import job, launch, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport


def test_a_stop_through_another_path_of_the_agent_dir_takes_over_a_frozen_supervisor(
    agent_dir: Path, client: AgentClient, workdir: Path, tmp_path: Path
) -> None:
    job_id = launch(client, workdir, ["sleep", "300"], grace=1)["id"]
    wait_state(client, job_id, {"running"})
    supervisor = wait_for(lambda: job(client, job_id)["supervisor_pid"], what="the supervisor's pid")
    alias = tmp_path / "same-home"
    alias.symlink_to(agent_dir)
    other = AgentClient(LocalTransport(alias))
    other.connect()
    os.kill(supervisor, signal.SIGSTOP)
    try:
        answer = other.request("stop", timeout=60, job=job_id, node="0")
    finally:
        other.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(supervisor, signal.SIGCONT)
    assert answer["state"] == "stopped", answer
