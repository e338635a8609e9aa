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
