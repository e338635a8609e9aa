"""Slurm clusters as hosts (issue 30), against a real private 3-node Slurm 22.05 cluster whose login
node is a real sshd (tests/support/slurm.py): submit, pending with its reason, a 1-node job's loss
through `metrics`, a 2-node job's two supervisors, stop with a checkpoint, exit 3 as 3."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.slurm import SlurmCluster
from tests.support.sshd import Sshd, SshHome
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # a real cluster and a login over SSH per CLI call


@pytest.fixture(scope="session")
def sshd(slurm_login: Sshd) -> Sshd:
    """Here `ssh_home` logs in to the cluster's login node (its sessions have SLURM_CONF)."""
    return slurm_login


@pytest.fixture
def cluster_host(slurm_cluster: SlurmCluster, ssh_home: SshHome, tmp_path: Path) -> str:
    added = gpudeck(
        "hosts",
        "add",
        "cl",
        "box",
        "--slurm",
        "--partition",
        "gpu",
        "--dir",
        str(ssh_home.agent_dir),
        "--yes",
        cwd=tmp_path,
    )
    assert added.returncode == 0, added.stdout + added.stderr
    assert "Slurm 22.05" in added.stdout and "gpu* (3 nodes, UP)" in added.stdout, added.stdout
    return "cl"


def job_of(job_id: str, tmp_path: Path) -> dict:
    listed = gpudeck("ps", "--json", "--all", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    return next(j for j in json.loads(listed.stdout) if j["id"] == job_id)


def launch(tmp_path: Path, *args: str) -> str:
    ran = gpudeck("run", "--host", "cl", "--json", "--workdir", str(tmp_path), *args, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return json.loads(ran.stdout)["id"]


def ended(job_id: str, tmp_path: Path) -> dict:
    return wait_for(
        lambda: (lambda j: j if j["state"] in ("exited", "failed", "stopped", "killed") else None)(
            job_of(job_id, tmp_path)
        ),
        timeout=60,
        interval=0.3,
        what=f"job {job_id} to end",
    )


def test_hosts_add_stores_the_slurm_table_and_check_reports_the_partitions(
    cluster_host: str, ssh_home: SshHome, tmp_path: Path
) -> None:
    text = (ssh_home.gpudeck_home / "hosts.toml").read_text()
    assert "[hosts.cl.slurm]" in text and 'partition = "gpu"' in text
    checked = gpudeck("hosts", "check", "cl", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "Slurm 22.05" in checked.stdout and "gpu*" in checked.stdout


def test_a_one_node_job_streams_its_loss_to_metrics_and_names_its_slurm_job(
    cluster_host: str, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    script = tmp_path / "train.py"
    script.write_text(
        "import json, os, time\n"
        "for step in range(1, 4):\n"
        "    print(json.dumps({'step': step, 'loss': 1.0 / step}), flush=True)\n"
        f"while not os.path.exists({str(release)!r}):\n"
        "    time.sleep(0.1)\n"
    )
    job_id = launch(tmp_path, "--", "python3", str(script))
    points = wait_for(
        lambda: (
            [
                json.loads(line)
                for line in gpudeck("metrics", "--json", job_id, cwd=tmp_path).stdout.splitlines()
                if '"loss"' in line
            ]
            if len(gpudeck("metrics", "--json", job_id, cwd=tmp_path).stdout.splitlines()) >= 3
            else None
        ),
        timeout=60,
        interval=0.3,
        what="three loss points while it runs",
    )
    assert [p["values"]["loss"] if "values" in p else p["loss"] for p in points][:3] == [1.0, 0.5, 1.0 / 3]
    running = job_of(job_id, tmp_path)
    assert running["state"] == "running"
    shown = gpudeck("inspect", "--json", job_id, cwd=tmp_path).stdout
    slurm_id = json.loads(shown)["slurm"]["job_id"]
    assert slurm_cluster.run("squeue", "-h", "-j", slurm_id, "-o", "%T").strip() == "RUNNING"
    release.write_text("")
    job = ended(job_id, tmp_path)
    assert job["state"] == "exited" and job["exit_code"] == 0
    assert "Slurm: COMPLETED" in (job["nodes"][0].get("cause") or json.dumps(job))


def test_a_two_node_job_has_a_supervisor_journaling_on_each_node(cluster_host: str, tmp_path: Path) -> None:
    job_id = launch(
        tmp_path,
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--",
        "bash",
        "-c",
        'echo "rank $NODE_RANK of $GPUDECK_NNODES on $SLURMD_NODENAME master $MASTER_ADDR"',
    )
    job = ended(job_id, tmp_path)
    assert job["state"] == "exited", job
    assert sorted(n["node"] for n in job["nodes"]) == ["0", "1"]
    outputs = {node: gpudeck("logs", "--node", node, job_id, cwd=tmp_path).stdout for node in ("0", "1")}
    assert "rank 0 of 2" in outputs["0"] and "rank 1 of 2" in outputs["1"], outputs
    nodes = {outputs[n].split(" on ")[1].split()[0] for n in outputs}
    assert nodes == {"n1", "n2"}  # one supervisor per compute node, each journaling its own lines


def test_a_job_asking_for_more_nodes_than_the_cluster_has_stays_pending_with_its_reason(
    cluster_host: str, tmp_path: Path
) -> None:
    job_id = launch(tmp_path, "--nodes", "4", "--launcher", "none", "--", "true")
    job = wait_for(
        lambda: (lambda j: j if "PartitionNodeLimit" in json.dumps(j) else None)(job_of(job_id, tmp_path)),
        timeout=30,
        interval=0.3,
        what="Slurm's pending reason",
    )
    assert job["state"] == "pending"
    shown = gpudeck("ps", cwd=tmp_path).stdout
    assert "pending" in shown
    inspected = gpudeck("inspect", job_id, cwd=tmp_path).stdout
    assert "waiting for allocation: PartitionNodeLimit" in inspected, inspected
    assert "slurm: job " in inspected and "PENDING (PartitionNodeLimit)" in inspected
    script = inspected.split("; script ")[1].split()[0]
    assert "srun --nodes=4 --ntasks=4 --ntasks-per-node=1" in Path(script).read_text()
    glance = gpudeck("hosts", "show", "cl", cwd=tmp_path)
    assert glance.returncode == 0, glance.stderr
    assert "partition gpu* UP: 3 nodes, GPUs 6:" in glance.stdout
    assert f"{job['slurm']['job_id']} PENDING (PartitionNodeLimit)" in glance.stdout, glance.stdout
    stopped = gpudeck("stop", job_id, cwd=tmp_path, timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    assert ended(job_id, tmp_path)["state"] == "stopped"


def test_stop_lets_the_trainer_checkpoint_and_slurm_records_cancelled(
    cluster_host: str, tmp_path: Path
) -> None:
    script = tmp_path / "ckpt.py"
    script.write_text(
        "import signal, sys, time\n"
        "def term(signum, frame):\n"
        f"    open({str(tmp_path / 'checkpoint.pt')!r}, 'w').write('saved')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    time.sleep(0.1)\n"
    )
    job_id = launch(tmp_path, "--grace", "20", "--", "python3", str(script))
    wait_for(
        lambda: "ready" in gpudeck("logs", job_id, cwd=tmp_path).stdout,
        timeout=60,
        interval=0.3,
        what="ready",
    )
    stopped = gpudeck("stop", job_id, cwd=tmp_path, timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    assert (tmp_path / "checkpoint.pt").read_text() == "saved"
    job = ended(job_id, tmp_path)
    assert job["state"] == "stopped"
    assert "Slurm: CANCELLED" in json.dumps(job)


def test_exit_3_is_reported_as_3(cluster_host: str, slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job_id = launch(tmp_path, "--", "bash", "-c", "echo bye; exit 3")
    job = ended(job_id, tmp_path)
    assert job["state"] == "failed" and job["exit_code"] == 3
    shown = gpudeck("inspect", "--json", job_id, cwd=tmp_path).stdout
    slurm = json.loads(shown)["slurm"]
    assert slurm["state"] == "FAILED" and slurm["exit_code"] == 3


def running_slurm_id(job_id: str, tmp_path: Path) -> str:
    job = wait_for(
        lambda: (lambda j: j if j["state"] == "running" else None)(job_of(job_id, tmp_path)),
        timeout=60,
        interval=0.3,
        what="running",
    )
    return str(job["slurm"]["job_id"])


def test_kill_cancels_the_allocation_at_once(
    cluster_host: str, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    job_id = launch(tmp_path, "--grace", "300", "--", "sleep", "600")
    slurm_id = running_slurm_id(job_id, tmp_path)
    killed = gpudeck("kill", job_id, cwd=tmp_path, timeout=120)
    assert killed.returncode == 0, killed.stderr
    job = ended(job_id, tmp_path)
    assert job["state"] == "killed" and job["slurm"]["state"] == "CANCELLED"
    assert slurm_cluster.run("squeue", "-h", "-j", slurm_id, "-o", "%T").strip() in ("", "COMPLETING")


def test_a_job_cancelled_outside_gpudeck_ends_as_slurm_recorded_it(
    cluster_host: str, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    job_id = launch(tmp_path, "--", "sleep", "600")
    slurm_id = running_slurm_id(job_id, tmp_path)
    slurm_cluster.run("scancel", slurm_id)  # the user's own scancel: TERM to every step, then KILL
    job = ended(job_id, tmp_path)
    assert job["state"] == "stopped"
    assert "Slurm: CANCELLED" in (job["cause"] or ""), job


def test_a_two_node_torchrun_job_meets_at_the_first_nodes_address(cluster_host: str, tmp_path: Path) -> None:
    """gloo's all-reduce over the two nodes: torchrun's line is the client's (as for SSH hosts), its
    place (PET_NODE_RANK, PET_MASTER_ADDR from `scontrol show node`) set inside the allocation."""
    pytest.importorskip("torch")
    script = tmp_path / "dist.py"
    script.write_text(
        "import os, torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.tensor([dist.get_rank() + 1.0])\n"
        "dist.all_reduce(t)\n"
        "print(f'rank {dist.get_rank()} of {dist.get_world_size()} sum {t.item()} via {os.environ[\"MASTER_ADDR\"]}')\n"
        "dist.destroy_process_group()\n"
    )
    venv_bin = Path(sys.executable).parent
    job_id = launch(
        tmp_path, "--nodes", "2", "--setup", f"export PATH={venv_bin}:$PATH", "--", "python", str(script)
    )
    job = ended(job_id, tmp_path)
    assert job["state"] == "exited", job
    for node in ("0", "1"):
        out = gpudeck("logs", "--node", node, job_id, cwd=tmp_path).stdout
        assert f"rank {node} of 2 sum 3.0 via 127.0.0.1" in out, out


def test_gpus_per_node_reach_the_command_through_slurm(cluster_host: str, tmp_path: Path) -> None:
    job_id = launch(tmp_path, "--gpus-per-node", "2", "--", "bash", "-c", 'echo "gpus=$CUDA_VISIBLE_DEVICES"')
    job = ended(job_id, tmp_path)
    assert job["state"] == "exited", job
    assert "gpus=0,1" in gpudeck("logs", job_id, cwd=tmp_path).stdout


def test_near_its_time_limit_every_node_stops_and_the_trainer_checkpoints(
    cluster_host: str, tmp_path: Path
) -> None:
    """--time 1 (a minute) with a 50 s warning: Slurm's USR1 to the batch shell (it may come up to 60 s
    early) makes every supervisor stop its command, which checkpoints before any TIMEOUT."""
    script = tmp_path / "ckpt.py"
    script.write_text(
        "import signal, sys, time\n"
        "def term(signum, frame):\n"
        f"    open({str(tmp_path / 'checkpoint.pt')!r}, 'w').write('saved')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "while True:\n"
        "    time.sleep(0.1)\n"
    )
    job_id = launch(
        tmp_path, "--time", "1", "--time-warning", "50", "--grace", "20", "--", "python3", str(script)
    )
    job = ended(job_id, tmp_path)
    assert job["state"] == "stopped" and job["reason"] == "Slurm time limit in 50 s", job
    assert (tmp_path / "checkpoint.pt").read_text() == "saved"
