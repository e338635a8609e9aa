"""The login node's agent against a real Slurm cluster, without SSH (issue 30): how often it asks
Slurm, and what a refused submission leaves."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from remote_agent.names import new_job_id
from remote_agent.serving.jobs import JobError, JobTable
from tests.support.slurm import SlurmCluster

pytestmark = pytest.mark.slow  # a real cluster (its start is shared by the session)


@pytest.fixture
def counted(slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SLURM_CONF set, and `squeue` on PATH first as a wrapper that logs each call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "squeue.calls"
    wrapper = bin_dir / "squeue"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {shutil.which("squeue")} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    return log


def spec(workdir: Path, nodes: int, **placement: object) -> dict:
    return {
        "id": new_job_id(),
        "name": "q",
        "argv": ["true"],
        "workdir": str(workdir),
        "placement": {"nodes": nodes, **placement},
    }


def test_one_squeue_per_listing_for_all_of_the_users_jobs(
    counted: Path, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    table = JobTable(tmp_path / "agent")
    launched = [table.launch(spec(tmp_path, 4)) for _ in range(3)]  # 4 nodes of 3: each stays pending
    try:
        counted.write_text("")
        listed = [j for j in table.list() if j["id"] in {o["id"] for o in launched}]
        assert len(listed) == 12 and {j["state"] for j in listed} == {"pending"}
        assert len(counted.read_text().splitlines()) == 1  # 12 nodes of 3 jobs: one squeue
    finally:
        for obj in launched:
            slurm_cluster.run("scancel", obj["slurm"]["job_id"])


def test_a_refused_submission_leaves_no_job_dir(counted: Path, tmp_path: Path) -> None:
    table = JobTable(tmp_path / "agent")
    asked = spec(tmp_path, 1, partition="nosuchpartition")
    with pytest.raises(JobError, match="could not submit job .* to Slurm: sbatch exited 1: .*partition"):
        table.launch(asked)
    assert not (tmp_path / "agent" / "jobs" / asked["id"]).exists()


SYSTEM_PYTHON = "/usr/bin/python3"
DRIVER = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from remote_agent.serving.jobs import JobTable
base = Path(sys.argv[2])
table = JobTable(base / "agent")
trainer = (
    "import signal, sys, time\\n"
    "def term(s, f):\\n"
    "    open('checkpoint.pt', 'w').write('saved')\\n"
    "    sys.exit(0)\\n"
    "signal.signal(signal.SIGTERM, term)\\n"
    "print('ready', flush=True)\\n"
    "while True:\\n"
    "    time.sleep(0.1)\\n"
)
spec = {"id": sys.argv[3], "name": "mine", "argv": ["python3", "-c", trainer], "workdir": str(base),
        "placement": {"nodes": 1}, "grace": 20}
table.launch(spec)
output = base / "agent" / "jobs" / spec["id"] / "0" / "output.log"
deadline = time.monotonic() + 60
while not (output.exists() and "ready" in output.read_text()):
    assert time.monotonic() < deadline, "never ready"
    time.sleep(0.1)
print(json.dumps(table.end(spec["id"], "0", "stop", None)))
"""


def test_a_non_root_user_submits_and_stops_its_own_job(slurm_cluster: SlurmCluster) -> None:
    """As `nobody` (setpriv: no account to add): squeue -u, scancel and the job's files are its own."""
    import json
    import subprocess
    import tempfile

    if shutil.which("setpriv") is None or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip("setpriv (util-linux) or /usr/bin/python3 is not installed")
    base = Path(tempfile.mkdtemp(prefix="gpudeck-slurm-user-"))
    try:
        os.chown(base, 65534, 65534)
        root = Path(__file__).resolve().parent.parent
        job_id = new_job_id()
        done = subprocess.run(
            # the system's python: the agent (stdlib) is started with it on the compute node too, where
            # `nobody` cannot reach a venv under root's 0700 home
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SYSTEM_PYTHON, "-c", DRIVER]
            + [str(root), str(base), job_id],
            env={**os.environ, "SLURM_CONF": str(slurm_cluster.conf), "HOME": str(base)},
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(base),
        )
        assert done.returncode == 0, done.stdout + done.stderr
        ended = json.loads(done.stdout.splitlines()[-1])
        assert ended["state"] == "stopped" and ended["slurm"]["state"] == "CANCELLED"
        checkpoint = base / "checkpoint.pt"
        assert checkpoint.read_text() == "saved" and checkpoint.stat().st_uid == 65534
        node_dir = base / "agent" / "jobs" / job_id / "0"
        assert (node_dir.stat().st_uid, node_dir.stat().st_mode & 0o777) == (65534, 0o700)
        script = node_dir / "slurm.sbatch"
        assert (script.stat().st_uid, script.stat().st_mode & 0o777) == (65534, 0o600)
    finally:
        if not os.environ.get("KEEP_BASE"):
            shutil.rmtree(base, ignore_errors=True)


def test_a_node_that_cannot_start_its_supervisor_ends_with_the_batch_outputs_words(
    counted: Path, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    import time

    table = JobTable(tmp_path / "agent")
    asked = spec(tmp_path, 1, sbatch_args=["--hold"])  # held: its spec is spoilt before it starts
    held = table.launch(asked)
    assert held["state"] == "pending" and "JobHeldUser" in held["cause"]
    (tmp_path / "agent" / "jobs" / asked["id"] / "0" / "spec.json").write_text("not json")
    slurm_cluster.run("scontrol", "release", held["slurm"]["job_id"])
    deadline = time.monotonic() + 60
    while True:
        node = next(j for j in table.list() if j["id"] == asked["id"])
        if node["state"] == "failed" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert node["state"] == "failed" and node["cause"] == "Slurm: FAILED"
    assert any("slurm-node" in line and "spec.json" in line for line in node["tail"]), node["tail"]
