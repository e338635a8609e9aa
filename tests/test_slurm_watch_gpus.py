"""`gpudeck watch --slurm-job ID` samples the watched job's GPUs (issue 30): a step inside its
allocation (`srun --jobid ID --overlap`, one task per node) runs the agent's `slurm-gpus` on each of
its nodes, and the watch journals their readings as `gpu` records, each GPU tagged with its node.
The nodes' GPUs are the fake NVML's (tests/support/slurm.py: gpu_login_node)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_agent.slurm.stepgpus import parse_step_output
from tests.conftest import gpudeck
from tests.support.slurm import SlurmCluster, gpu_login_node
from tests.support.sshd import Sshd, SshHome
from tests.support.waiting import wait_for
from tests.test_slurm_hosts import cluster_host, ended  # noqa: F401 (fixture)

UTIL = (91, 12)


def test_a_steps_lines_are_read_totally() -> None:
    out = (
        "srun: warning: something\n"
        '{"node": "n2", "gpus": [{"index": 1, "uuid": "b", "node": "n2"}, {"index": 0, "uuid": "a", "node": "n2"}]}\n'
        '{"node": "n1", "gpus": [{"index": 0, "uuid": "c", "node": "n1"}, 7]}\n'
        '{"node": "n3", "gpus": "none"}\n'
    )
    assert [(g["node"], g["index"]) for g in parse_step_output(out)] == [("n1", 0), ("n2", 0), ("n2", 1)]


@pytest.fixture(scope="module")
def sshd(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = gpu_login_node(slurm_cluster, tmp_path_factory.mktemp("slurm-watch-gpu-login"), UTIL)
    yield server
    server.stop()


@pytest.mark.slow  # a real cluster behind a login over SSH
@pytest.mark.timeout(180)
def test_a_watched_two_node_sbatch_job_has_each_nodes_gpus_sampled(
    fake_nvml_bundled: None,
    cluster_host: str,  # noqa: F811
    slurm_cluster: SlurmCluster,
    ssh_home: SshHome,
    tmp_path: Path,
) -> None:
    release = tmp_path / "release"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\necho step=1 loss=0.5\nwhile [ ! -e {release} ]; do sleep 0.1; done\n")
    slurm_id = slurm_cluster.run(
        "sbatch",
        "--parsable",
        "--nodes=2",
        "--gpus-per-node=2",
        f"--output={tmp_path}/out-%j.log",
        str(script),
    ).strip()
    wait_for(
        lambda: slurm_cluster.run("squeue", "-h", "-j", slurm_id, "-o", "%T").strip() == "RUNNING",
        timeout=30,
        interval=0.2,
        what="the sbatch job to run",
    )
    watched = gpudeck("watch", "--host", "cl", "--slurm-job", slurm_id, "--json", cwd=tmp_path)
    assert watched.returncode == 0, watched.stderr
    job_id = json.loads(watched.stdout)["id"]
    journal = ssh_home.agent_dir / "jobs" / job_id / "0" / "events.jsonl"

    def sampled() -> list[dict] | None:
        records = [json.loads(line) for line in journal.read_text().splitlines() if '"gpu"' in line]
        gpus = [g for r in records if r.get("kind") == "gpu" for g in r["gpus"]]
        return gpus if {g.get("node") for g in gpus} >= {"n1", "n2"} else None

    gpus = wait_for(sampled, timeout=90, interval=0.5, what="both nodes' GPUs in the watch's journal")
    assert {(g["node"], g["uuid"], g["util"]) for g in gpus} >= {
        ("n1", "GPU-n1-0", UTIL[0]),
        ("n1", "GPU-n1-1", UTIL[1]),
        ("n2", "GPU-n2-0", UTIL[0]),
        ("n2", "GPU-n2-1", UTIL[1]),
    }
    release.write_text("")
    assert ended(job_id, tmp_path)["state"] == "exited"
