"""`gpudeck logs -f` ends with the code a shell would have seen from the job: its exit code, or
128 + the number of the signal that ended it (143 for SIGTERM, 138 for SIGUSR1), never the bare number."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for

DIES_OF_SIGUSR1 = (
    "import os, signal, time\nprint('bye', flush=True)\ntime.sleep(0.5)\nos.kill(os.getpid(), signal.SIGUSR1)"
)
WAITS = "print('up', flush=True)\nimport time\ntime.sleep(120)"  # SIGTERM's default action ends it


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_a_job_ended_by_a_signal_exits_128_plus_its_number(gpudeck_home: Path, workdir: Path) -> None:
    job_id = gpudeck("run", "--", sys.executable, "-c", DIES_OF_SIGUSR1, cwd=workdir).stdout.strip()
    follow = gpudeck("logs", "-f", job_id, cwd=workdir)  # follows while it runs, then ends with it
    assert follow.stdout == "bye\n", follow.stderr
    assert follow.returncode == 128 + signal.SIGUSR1 == 138


@pytest.mark.slow
def test_a_stopped_job_that_died_of_sigterm_exits_143(gpudeck_home: Path, workdir: Path) -> None:
    job_id = gpudeck("run", "--", sys.executable, "-c", WAITS, cwd=workdir).stdout.strip()
    log = gpudeck_home / "local-agent" / "jobs" / job_id / "0" / "output.log"
    wait_for(lambda: log.exists() and "up" in log.read_text(), timeout=30, what="the job's first line")
    assert gpudeck("stop", job_id, cwd=workdir).returncode == 0
    follow = gpudeck("logs", "-f", job_id, cwd=workdir)
    assert follow.stdout == "up\n", follow.stderr
    assert follow.returncode == 128 + signal.SIGTERM == 143
