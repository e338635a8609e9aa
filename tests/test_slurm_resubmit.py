"""restart and scale on a Slurm host (issue 30), against the real private cluster behind a real sshd
login node: a new allocation resumes the reference trainer from the checkpoint on the shared dir
(restart_of / resized_from, as on SSH hosts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import Sshd, free_port
from tests.support.trainer_runs import TINY, json_lines
from tests.support.waiting import wait_for
from tests.test_slurm_hosts import cluster_host, ended, job_of, launch  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow  # a real cluster, torch on each node, a login over SSH per CLI call


@pytest.fixture(scope="session")
def sshd(slurm_login: Sshd) -> Sshd:
    return slurm_login


def trainer(tmp_path: Path) -> list[str]:
    venv_bin = Path(sys.executable).parent
    return [
        "--setup",
        f"export PATH={venv_bin}:$PATH",
        "--",
        "python",
        "-m",
        "trainer",
        "--steps",
        "100000",
        *TINY,
        "--checkpoint-dir",
        str(tmp_path / "ck"),
    ]


def events(job_id: str, node: str, what: str, tmp_path: Path) -> list[dict]:
    out = gpudeck("logs", "--node", node, job_id, cwd=tmp_path).stdout
    return [p for p in json_lines(out) if p.get("event") == what]


def resumed(job_id: str, tmp_path: Path) -> dict:
    return wait_for(
        lambda: (events(job_id, "0", "resumed", tmp_path) or [None])[0],
        timeout=120,
        interval=0.5,
        what=f"{job_id} to resume",
    )


@pytest.mark.timeout(400)
def test_a_job_stopped_by_its_time_limit_restarts_at_its_checkpoint(
    cluster_host: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """--time 2 with a 60 s warning (slurmctld checks limits about every 30 s, so it comes 30-60 s
    in: time for torch to start on a loaded machine): the trainer checkpoints on the warning, the
    job ends; restart submits a new allocation whose trainer resumes at that checkpoint's step."""
    pytest.importorskip("torch")
    job_id = launch(tmp_path, "--name", "limited", "--time", "2", "--time-warning", "60", *trainer(tmp_path))
    job = wait_for(  # the warning comes 30-60 s in; then the grace
        lambda: (lambda j: j if j["state"] in ("exited", "failed", "stopped", "killed") else None)(
            job_of(job_id, tmp_path)
        ),
        timeout=150,
        interval=0.5,
        what="the time limit's stop",
    )
    assert job["state"] == "stopped" and job["reason"] == "Slurm time limit in 60 s", job
    saved = events(job_id, "0", "checkpoint_saved", tmp_path)
    assert saved, gpudeck("logs", job_id, cwd=tmp_path).stdout[-2000:]
    again = gpudeck("restart", job_id, cwd=tmp_path, timeout=120)
    assert again.returncode == 0, again.stderr
    new = again.stdout.strip().split()[0]
    assert new != job_id
    first = resumed(new, tmp_path)
    assert first["step"] == saved[-1]["step"] and first["step"] > 0, first
    obj = job_of(new, tmp_path)
    assert obj["restart_of"] == job_id and obj["name"] == "limited"
    assert obj["slurm"]["job_id"] != job["slurm"]["job_id"]  # a new allocation
    assert gpudeck("kill", new, cwd=tmp_path, timeout=120).returncode == 0


@pytest.mark.timeout(400)  # two allocations and a 2-node trainer: ~90 s idle, far more on a loaded machine
def test_scale_up_from_two_to_three_nodes_resumes_at_the_checkpoint(
    cluster_host: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    pytest.importorskip("torch")
    # not torchrun's default port: any other torchrun on this machine may hold it (EADDRINUSE)
    port = str(free_port())
    job_id = launch(
        tmp_path, "--name", "grow", "--grace", "30", "--nodes", "2", "--master-port", port, *trainer(tmp_path)
    )
    wait_for(
        lambda: any(
            (p.get("step") or 0) >= 3 for p in json_lines(gpudeck("logs", job_id, cwd=tmp_path).stdout)
        ),
        timeout=120,
        interval=0.5,
        what="step 3 on 2 nodes",
    )
    scaled = gpudeck("scale", job_id, "+1", cwd=tmp_path, timeout=180)
    assert scaled.returncode == 0, scaled.stderr
    new = scaled.stdout.strip().split()[0]
    assert new != job_id and "2 → 3 nodes" in scaled.stderr + scaled.stdout
    old = job_of(job_id, tmp_path)
    assert old["state"] == "stopped" and "Slurm: CANCELLED" in json.dumps(old)
    saved = events(job_id, "0", "checkpoint_saved", tmp_path)
    assert saved
    first = resumed(new, tmp_path)
    assert first["world_size"] == 3 and first["step"] == saved[-1]["step"], first
    obj = job_of(new, tmp_path)
    assert obj["restart_of"] == job_id and obj["resized_from"]["job"] == job_id
    assert obj["resized_from"]["nodes"] == 2
    assert sorted(n["node"] for n in obj["nodes"]) == ["0", "1", "2"]
    assert gpudeck("kill", new, cwd=tmp_path, timeout=120).returncode == 0
