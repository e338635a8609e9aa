"""Issue 33, supervisors that cost nothing idle: a real supervisor of a job that prints nothing keeps
only what it uses loaded. Heavy stdlib modules it needs only now and then (a preemption notice over
HTTP, a stack dump, a statistic, the CLI parser) are imported when used; this checks the loaded
modules of the running process, as tests/test_layering.py does for the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from remote_agent.serving.jobs import JobTable
from tests.support.jobdir import prepared_job, running
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[1]

# What an idle supervisor must not hold: each is hundreds of KiB to MiBs per process, times the
# host's jobs (200 supervisors: 2.3 GiB PSS before issue 33).
HEAVY = {
    "argparse",  # the entry's parser: `run` is parsed by hand (remote_agent/__main__.py)
    "urllib.request",  # preemption notices (preempt/metadata.py), webhooks (notify/send.py)
    "http.client",
    "ssl",
    "email",
    "statistics",  # and its decimal and fractions
    "decimal",
    "fractions",
    "concurrent.futures",  # stack dumps (stacks/take.py)
    "logging",
    "secrets",  # new job ids (names.py)
    "calendar",
    "datetime",
    "platform",  # hello's host info (probes/sysinfo.py)
}

# The supervisor as serve starts it (launcher.self_command), writing its loaded modules to a file
# once the test asks (a file appears): the running process's own view, not an import in a test.
_PROBE = r"""
import os, sys, threading, time
ask, out, tree, job_dir = sys.argv[1:5]
def report():
    while not os.path.exists(ask):
        time.sleep(0.05)
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(sorted(sys.modules)))
    os.rename(out + ".tmp", out)
threading.Thread(target=report, daemon=True).start()
sys.path.insert(0, tree)
from remote_agent.__main__ import main
main(["run", job_dir])
"""


def test_an_idle_supervisor_keeps_no_heavy_module_loaded(agent_dir: Path, tmp_path: Path) -> None:
    spec, directory = prepared_job(agent_dir, tmp_path, ["sleep", "600"])
    ask, out = tmp_path / "ask", tmp_path / "modules"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _PROBE, str(ask), str(out), str(REPO), str(directory)],
        env=env,
        cwd="/",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: running(agent_dir, spec["id"]), timeout=30, what="the job running")
        ask.touch()
        wait_for(out.exists, timeout=30, what="the supervisor's module list")
        loaded = set(out.read_text().split())
        assert "remote_agent.supervision.supervisor" in loaded  # it is the supervisor we looked at
        assert sorted(HEAVY & loaded) == []
    finally:
        JobTable(agent_dir).end(spec["id"], "0", "kill", 0.0)
        proc.wait(timeout=30)
