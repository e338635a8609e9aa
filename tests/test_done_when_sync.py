"""Issue 27's "Done when", as a user runs it: on a fresh SSH host (the real sshd, a clean agent dir)
`gpudeck run --host box --sync ./proj --requirements proj/requirements.txt -- python -m proj.train`
brings the code and its environment there, trains, journals its loss, and a `restart` after a local
edit runs the code the job started with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import SshHome
from tests.support.wheels import job_path, make_wheel, uv_binary

pytestmark = pytest.mark.slow

TRAIN = """import json, sys, time
import gdlossy  # from the job's environment, built on the host
print("code", gdlossy.VERSION, "{version}", flush=True)
for step in range(1, 21):
    print(json.dumps({{"step": step, "loss": round(2.0 / step, 4)}}), flush=True)
    time.sleep(0.01)
"""


def _project(root: Path, version: str) -> Path:
    project = root / "proj"
    (project / "proj").mkdir(parents=True, exist_ok=True)
    (project / "proj" / "__init__.py").write_text("")
    (project / "proj" / "train.py").write_text(TRAIN.format(version=version))
    (project / "requirements.txt").write_text("gdlossy==0.3\n")
    (project / "checkpoints.log").write_text("ignored\n")
    (project / ".gitignore").write_text("*.log\n")
    return project


def _ended(job: str, cwd: Path) -> str:
    follow = gpudeck("logs", "-f", job, cwd=cwd, timeout=180)
    assert follow.returncode == 0, follow.stdout[-2000:] + follow.stderr
    return follow.stdout


def test_sync_requirements_train_and_restart_the_original_code(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    assert not (ssh_home.agent_dir / "code").exists()  # a fresh host: no code, no environment
    make_wheel(tmp_path / "wheels", "gdlossy", "0.3")
    client = tmp_path / "client"
    _project(client, "v1")
    host_path = job_path(tmp_path / "host-bin", uv_binary())
    run = gpudeck(
        "run",
        "--host",
        "box",
        "--sync",
        "./proj",
        "--requirements",
        "proj/requirements.txt",
        "--setup",
        f"export PATH={host_path}",
        "--env",
        "PIP_NO_INDEX=1",
        "--env",
        f"PIP_FIND_LINKS={tmp_path / 'wheels'}",
        "--",
        "python",
        "-m",
        "proj.train",
        cwd=client,
    )
    assert run.returncode == 0, run.stderr
    job = run.stdout.strip()
    output = _ended(job, client)
    assert "code 0.3 v1" in output
    metrics = gpudeck("metrics", job, "--json", cwd=client).stdout.splitlines()
    losses = [json.loads(line)["values"]["loss"] for line in metrics]
    assert losses == [round(2.0 / step, 4) for step in range(1, 21)]  # what the live chart draws
    shown = json.loads(gpudeck("inspect", "--json", job, cwd=client).stdout)
    assert shown["code"]["home"] == job and shown["environment"]["key"]
    work = ssh_home.agent_dir / "work" / job
    assert (work / "proj" / "train.py").is_file() and not (work / "checkpoints.log").exists()

    _project(client, "v2")  # a local edit after the launch
    restarted = gpudeck("restart", job, cwd=client)
    assert restarted.returncode == 0, restarted.stderr
    new_job = restarted.stdout.strip().split()[-1]
    again = _ended(new_job, client)
    assert "code 0.3 v1" in again and "v2" not in again  # the original code, its environment reused
