"""`gpudeck ssh` on a Slurm job (issue 35): the shell is a step inside the job's allocation, run with
srun on the login node (a real private Slurm cluster behind a real sshd): it runs on the job's
compute node, in its working directory, with its variables, and its exit status comes back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.slurm import SlurmCluster
from tests.support.sshd import Sshd, SshHome
from tests.support.waiting import wait_for
from tui.commands.shell_on import slurm_step


@pytest.fixture(scope="session")
def sshd(slurm_login: Sshd) -> Sshd:
    """Here `ssh_home` logs in to the cluster's login node (its sessions have SLURM_CONF)."""
    return slurm_login


def test_the_step_line_quotes_the_shell_line() -> None:
    line = slurm_step("42", "1", "cd -- '/a b' || exit 1; exec sh -l", interactive=True)
    assert line == (
        "srun --jobid=42 --overlap --nodes=1 --ntasks=1 --relative=1 --pty bash -c "
        "'cd -- '\"'\"'/a b'\"'\"' || exit 1; exec sh -l'"
    )


@pytest.mark.slow  # a real cluster and logins over SSH
def test_ssh_on_a_slurm_job_runs_inside_its_allocation(
    slurm_cluster: SlurmCluster, ssh_home: SshHome, tmp_path: Path
) -> None:
    added = gpudeck(
        "hosts", "add", "cl", "box", "--slurm", "--partition", "gpu", "--dir", str(ssh_home.agent_dir), "--yes",
        cwd=tmp_path,
    )  # fmt: skip
    assert added.returncode == 0, added.stdout + added.stderr
    workdir = tmp_path / "a dir"
    workdir.mkdir()
    ran = gpudeck(
        "run", "--host", "cl", "--json", "--workdir", str(workdir), "--", "sleep", "300", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    job_id = json.loads(ran.stdout)["id"]

    def running() -> dict | None:
        listed = json.loads(gpudeck("ps", "--json", cwd=tmp_path).stdout)
        job = next((j for j in listed if j["id"] == job_id), None)
        return job if job and job["state"] == "running" else None

    slurm_id = None
    try:
        slurm_id = wait_for(running, timeout=90, interval=0.3, what="the job running")["slurm"]["job_id"]
        out = gpudeck(
            "ssh", job_id, "--", "sh", "-c",
            'echo "$SLURM_JOB_ID|$SLURM_STEP_ID|$(pwd)|$GPUDECK_JOB_ID"; exit 3',
            cwd=tmp_path,
        )  # fmt: skip
        assert out.returncode == 3, out.stderr
        # (the test box's .bashrc prints junk first, as some login nodes do)
        job_id_seen, step, pwd, gpudeck_job = out.stdout.strip().splitlines()[-1].split("|")
        assert job_id_seen == str(slurm_id) and step.isdigit()  # a step of the job's own allocation
        assert (pwd, gpudeck_job) == (str(workdir), job_id)
    finally:
        gpudeck("stop", job_id, cwd=tmp_path)
        if slurm_id is not None:
            slurm_cluster.run("scancel", str(slurm_id))
