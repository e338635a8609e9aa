"""The `signal` op (the process view's x/i/X): a signal reaches one process of the job's tree, and
only one that belongs to it now — another process, the supervisor or a bad signal name is refused."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, AgentError

# The command waits on a child that sleeps: TERM to the child ends it, and with it the job (exit code).
TREE = "import subprocess, sys\nsys.exit(subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']).wait())"


@pytest.mark.slow
def test_a_signal_reaches_a_child_of_the_job_and_nothing_else(client: AgentClient, workdir: Path) -> None:
    job = launch(client, workdir, [sys.executable, "-c", TREE], name="sig")
    running = wait_state(client, job["id"], {"running"})

    def child() -> dict | None:
        rows = client.request("procs", job=job["id"], node="0", interval=0.05)["processes"]
        found = [r for r in rows if r["role"] == "child" and "time.sleep" in r["command"]]
        return found[0] if found else None

    pid = wait_for(child, what="the sleeping child")["pid"]
    for bad, why in (
        ({"pid": os.getpid(), "signal": "TERM"}, "not a live process of job"),
        ({"pid": running["supervisor_pid"], "signal": "KILL"}, "supervisor"),
        ({"pid": pid, "signal": "HUP"}, "signal: expected one of TERM, INT, KILL"),
    ):
        with pytest.raises(AgentError, match=why):
            client.request("signal", job=job["id"], node="0", **bad)
    answer = client.request("signal", job=job["id"], node="0", pid=pid, signal="TERM")
    assert answer == {"pid": pid, "signal": "TERM", "role": "child"}
    ended = wait_state(client, job["id"], {"failed", "exited"})
    assert ended["exit_code"] == 256 - 15  # the command exits with its child's -SIGTERM
