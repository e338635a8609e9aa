"""`gpudeck watch --host NAME --slurm-job ID` (issue 30): a plain `sbatch` job gpudeck did not start,
followed read-only through its output file (scontrol's StdOut, %N resolved by the login node's
agent), its loss parsed into metrics, the watch ending when Slurm says the job ended."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.slurm import SlurmCluster
from tests.support.sshd import Sshd
from tests.support.waiting import wait_for
from tests.test_slurm_hosts import cluster_host, ended, job_of  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow  # a real cluster behind a login over SSH


@pytest.fixture(scope="session")
def sshd(slurm_login: Sshd) -> Sshd:
    return slurm_login


def test_a_plain_sbatch_job_is_watched_through_its_output_file(
    cluster_host: str,  # noqa: F811
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
) -> None:
    release = tmp_path / "release"
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        'for step in 1 2 3; do echo "step=$step loss=0.$((9 - step))"; done\n'
        f"while [ ! -e {release} ]; do sleep 0.1; done\n"
        'echo "step=4 loss=0.1"\n'
    )
    out = slurm_cluster.run(
        "sbatch",
        "--parsable",
        "--partition=gpu",
        "--job-name=plain",
        f"--output={tmp_path}/out-%x-%N-%j.log",
        str(script),
    )
    slurm_id = out.strip().split(";")[0]
    wait_for(  # pending, its %N is no host yet: the watch is refused with that reason
        lambda: slurm_cluster.run("squeue", "-h", "-j", slurm_id, "-o", "%T").strip() == "RUNNING",
        timeout=30,
        interval=0.2,
        what="the sbatch job to run",
    )
    watched = gpudeck("watch", "--host", "cl", "--slurm-job", slurm_id, "--json", cwd=tmp_path)
    assert watched.returncode == 0, watched.stderr
    job_id = json.loads(watched.stdout)["id"]

    def losses() -> list[float]:
        shown = gpudeck("metrics", "--json", job_id, cwd=tmp_path).stdout.splitlines()
        points = [json.loads(line) for line in shown if '"loss"' in line]
        return [p["values"]["loss"] if "values" in p else p["loss"] for p in points]

    assert wait_for(
        lambda: losses() if len(losses()) >= 3 else None, timeout=60, interval=0.3, what="three losses"
    )[:3] == [0.8, 0.7, 0.6]
    inspected = json.loads(gpudeck("inspect", "--json", job_id, cwd=tmp_path).stdout)
    path = inspected["nodes"][0].get("watch") or json.dumps(inspected)
    host = slurm_cluster.run("scontrol", "show", "node", "-o", "n1").split("NodeHostName=")[1].split()[0]
    assert f"out-plain-{host.split('.')[0]}-{slurm_id}.log" in json.dumps(path), path  # %N: batch host
    release.write_text("")
    job = ended(job_id, tmp_path)
    assert job["state"] == "exited" and "Slurm: COMPLETED" in json.dumps(job), job
    assert losses()[-1] == 0.1  # the last line, read before the watch ended
    refused = gpudeck("watch", "--host", "cl", "--slurm-job", "999999", cwd=tmp_path)
    assert refused.returncode != 0 and "999999" in refused.stderr, refused.stderr
