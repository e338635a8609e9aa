"""Issue 29, finding 6: rules hold while nobody looks. A budgeted job whose supervisor is SIGKILLed
while no gpudeck command runs is adopted by the host's keeper within seconds and still stops at
its budget; nothing here lists jobs (the journal is read from disk)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.support.jobs import alive, launch
from tests.support.node_journals import events, final, first_state, records
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport


@pytest.mark.slow  # the job runs to its budget: ~8 s
@pytest.mark.timeout(90)
def test_a_killed_supervisor_of_a_budgeted_job_is_adopted_and_stopped_at_its_budget_with_no_command_running(
    agent_dir: Path, workdir: Path
) -> None:
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    try:  # 1 USD/s for an 8 USD budget
        job = launch(
            client,
            workdir,
            [sys.executable, "-c", "import time; time.sleep(300)"],
            price={"per_hour": 3600.0, "share": 1.0},
            budget=8,
            grace=1,
        )["id"]
    finally:
        client.close()  # every gpudeck window closed: no serve runs from here on
    wait_for(lambda: any(r.get("state") == "running" for r in records(agent_dir, job)), what="running")
    supervisor = first_state(records(agent_dir, job), "starting")["supervisor_pid"]
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not alive(supervisor), what="the supervisor's death")
    [adopted] = wait_for(
        lambda: events(records(agent_dir, job), "adopted"), timeout=10, interval=0.1, what="adoption"
    )
    end = wait_for(lambda: final(records(agent_dir, job)), timeout=30, interval=0.1, what="the job's end")
    recs = records(agent_dir, job)
    assert end["state"] == "stopped" and end["reason"].startswith("budget: "), end
    ran = end["t"] - first_state(recs, "running")["t"]
    print(f"supervisor SIGKILLed, no command running: stopped by the keeper after {ran:.2f} s (budget 8 s)")
    assert 6 <= ran <= 8.5, ran  # 1 USD/s: at its budget, not before and not past it
    assert "keeper" in adopted["data"]["why"], adopted
