"""A Slurm restart or resize is guarded as every resize is (issue 30): the job-level claim, the new
batch tried with `sbatch --test-only` before the running job is stopped, and a new submission that
Slurm refuses after the stop rolled back (claim let go, nothing of the new job kept, the old job's
record naming the refusal). Against the real private cluster behind a real sshd login node."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.slurm import SlurmCluster
from tests.support.sshd import Sshd
from tests.support.waiting import wait_for
from tests.test_slurm_hosts import cluster_host, ended, job_of, launch  # noqa: F401 (fixture)
from tui.actions import find
from tui.actions.control import JobTarget, end
from tui.actions.slurm_resubmit import resubmit
from tui.errors import GpudeckError
from tui.session import Session

pytestmark = pytest.mark.slow  # a real cluster behind a login over SSH


@pytest.fixture(scope="session")
def sshd(slurm_login: Sshd) -> Sshd:
    return slurm_login


def running(job_id: str, tmp_path: Path) -> dict:
    return wait_for(
        lambda: (lambda j: j if j["state"] == "running" else None)(job_of(job_id, tmp_path)),
        timeout=60,
        interval=0.3,
        what=f"{job_id} running",
    )


def test_a_resize_slurm_would_refuse_is_said_before_the_job_is_stopped(
    cluster_host: str,  # noqa: F811
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
) -> None:
    job_id = launch(tmp_path, "--launcher", "none", "--", "sleep", "600")
    slurm_id = running(job_id, tmp_path)["slurm"]["job_id"]
    for _ in range(2):  # the second is refused for the same reason: the first let its claim go
        scaled = gpudeck("scale", job_id, "+3", cwd=tmp_path, timeout=120)
        assert scaled.returncode != 0, scaled.stdout
        assert "keeps running as it is" in scaled.stderr, scaled.stderr
        assert "sbatch --test-only refused a 4-node allocation" in scaled.stderr, scaled.stderr
    assert job_of(job_id, tmp_path)["state"] == "running"
    assert slurm_cluster.run("squeue", "-h", "-j", slurm_id, "-o", "%T").strip() == "RUNNING"
    jobs = json.loads(gpudeck("ps", "--json", "--all", cwd=tmp_path).stdout)
    assert [j["id"] for j in jobs if j.get("restart_of") == job_id] == []  # nothing submitted
    assert gpudeck("kill", job_id, cwd=tmp_path, timeout=120).returncode == 0


@pytest.fixture
def partition_back_up(slurm_cluster: SlurmCluster) -> Iterator[None]:
    yield
    slurm_cluster.run("scontrol", "update", "PartitionName=gpu", "State=UP")


def test_a_new_allocation_refused_after_the_stop_is_rolled_back_and_recorded(
    cluster_host: str,  # noqa: F811
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
    partition_back_up: None,
) -> None:
    """The pre-flight passes; then, while the old job stops, the partition goes inactive (an admin),
    so sbatch refuses the real submission: the restart says so, leaves no new job, the old job's
    record names the refusal, and the claim is free (a later restart goes ahead)."""
    job_id = launch(tmp_path, "--launcher", "none", "--", "sleep", "600")
    running(job_id, tmp_path)
    session = Session()
    try:
        target = JobTarget.of_job(find.resolve(session, job_id))

        def stop_then_close_the_partition() -> None:
            end(session, target, "stop", reason="restart", resizing=True)
            slurm_cluster.run("scontrol", "update", "PartitionName=gpu", "State=INACTIVE")

        with pytest.raises(GpudeckError) as refused:
            resubmit(session, session.store, "cl", job_id, 1, stop_then_close_the_partition)
    finally:
        session.close()
    said = str(refused.value)
    assert "new allocation was refused" in said and "partition not available" in said, said
    old = ended(job_id, tmp_path)
    assert old["state"] == "stopped"
    record = old["slurm"]["resubmit"]
    assert "partition not available" in record["refused"], record
    jobs = json.loads(gpudeck("ps", "--json", "--all", cwd=tmp_path).stdout)
    assert record["as"] not in [j["id"] for j in jobs]  # nothing of the new job is left
    slurm_cluster.run("scontrol", "update", "PartitionName=gpu", "State=UP")
    again = gpudeck("restart", job_id, cwd=tmp_path, timeout=120)  # the claim was let go
    assert again.returncode == 0, again.stderr
    new = again.stdout.strip().split()[0]
    assert job_of(new, tmp_path)["restart_of"] == job_id
    assert gpudeck("kill", new, cwd=tmp_path, timeout=120).returncode == 0
