"""Jobs in containers (issue 28) with real podman: output and metrics as on the bare host, a stop
that reaches the trainer through a `sh -c` entrypoint (busybox sh and dash), kill, adoption, `rm`,
the process view, and nothing left in the runtime after any end."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from remote_agent.jobstate import supervisor_alive
from tests.support.container_jobs import (
    assert_nothing_left,
    container_job,
    name_of,
    output,
    running_container_job,
)
from tests.support.containers import (
    BB_IMAGE,
    DASH_IMAGE,
    PY_IMAGE,
    containers_named,
    podman,
)
from tests.support.jobs import journal, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient


@pytest.mark.slow
def test_a_container_jobs_loss_is_journaled_and_nothing_is_left(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    script = (
        "import json\nfor s in range(1, 6): print(json.dumps({'step': s, 'loss': 1.0 / s}), flush=True)\n"
    )
    job = container_job(client, workdir, ["python3", "-c", script], env={"SECRET_TOKEN": "hunter2-xyz"})
    end = wait_state(client, job["id"], {"exited", "failed"}, timeout=60)
    assert end["state"] == "exited", output(agent_dir, job["id"])
    records = journal(agent_dir, job["id"])
    losses = [r["values"]["loss"] for r in records if r["kind"] == "metric"]
    assert losses == [1.0, 0.5, 1.0 / 3, 0.25, 0.2]
    events = {r.get("event"): r.get("data") for r in records if r["kind"] == "event"}
    assert events["container"]["name"] == name_of(job)
    assert_nothing_left(job)


@pytest.mark.slow
@pytest.mark.parametrize("image", [PY_IMAGE, DASH_IMAGE], ids=["busybox-sh", "dash"])
def test_stop_reaches_the_trainer_through_a_sh_c_entrypoint_and_it_checkpoints(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path, image: str
) -> None:
    # A compound `sh -c` never execs python: the shell, not the trainer, is the wrapper's child
    # (and gpudeck's PID 1 runs under the image's own /bin/sh: busybox, or dash as in Debian images).
    job = running_container_job(
        client, workdir, agent_dir, ["sh", "-c", "python3 train.py; echo after"], image=image
    )
    final = client.request("stop", job=job["id"], node="0", grace=60, timeout=90)
    assert final["state"] == "stopped", output(agent_dir, job["id"])
    assert (workdir / "ckpt.txt").read_text().startswith("step ")
    assert [r for r in journal(agent_dir, job["id"]) if r.get("event") == "checkpoint_saved"]
    assert_nothing_left(job)


@pytest.mark.slow
def test_kill_leaves_nothing_in_the_runtime(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = running_container_job(client, workdir, agent_dir, ["python3", "train.py"])
    final = client.request("kill", job=job["id"], node="0", timeout=60)
    assert final["state"] == "killed"
    assert not (workdir / "ckpt.txt").exists()
    assert_nothing_left(job)


@pytest.mark.slow
def test_a_sigkilled_supervisor_is_adopted_then_stopped_with_a_checkpoint(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = running_container_job(client, workdir, agent_dir, ["python3", "train.py"], heartbeat_interval=0.2)
    supervisor = next(
        r["supervisor_pid"] for r in journal(agent_dir, job["id"]) if r.get("state") == "starting"
    )
    os.kill(supervisor, signal.SIGKILL)
    wait_for(
        lambda: not supervisor_alive(agent_dir / "jobs" / job["id"] / "0" / "lock"), what="the lock free"
    )
    client.request("jobs")  # whoever finds it lost hands it to a new supervisor
    wait_for(
        lambda: [r for r in journal(agent_dir, job["id"]) if r.get("event") == "adopted"],
        timeout=30,
        what="adopted",
    )
    final = client.request("stop", job=job["id"], node="0", grace=60, timeout=90)
    assert final["state"] == "stopped"
    assert (workdir / "ckpt.txt").read_text().startswith("step ")
    assert_nothing_left(job)


@pytest.mark.slow
def test_rm_of_an_ended_job_removes_a_container_the_runtime_kept(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = running_container_job(client, workdir, agent_dir, ["python3", "train.py"])
    client.request("kill", job=job["id"], node="0", timeout=60)
    assert_nothing_left(job)
    # A container of the job's name the runtime still holds (as after a crash mid-cleanup):
    podman("create", "--name", name_of(job), BB_IMAGE, "true")
    assert containers_named(name_of(job))
    client.request("rm", job=job["id"], node="0")
    assert not containers_named(name_of(job))


@pytest.mark.slow
def test_the_containers_processes_are_the_jobs_in_the_process_view(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    """They run in the host's PID namespace with the job's marker: per-process GPU memory (NVML
    reports host pids) is attributed to the job as on the bare host."""
    job = running_container_job(client, workdir, agent_dir, ["python3", "train.py"])
    rows = client.request("procs", job=job["id"], node="0", interval=0.2)["processes"]
    trainer = [r for r in rows if r["command"].startswith("python3 train.py")]
    assert trainer and trainer[0]["role"] == "child", rows
    client.request("kill", job=job["id"], node="0", timeout=60)
    assert_nothing_left(job)
