"""GPUs for container jobs (issue 28): refused in one line where the runtime cannot pass them,
passed as CDI devices (a test vendor's spec) with CUDA_VISIBLE_DEVICES from 0 inside, docker's path
(a dockerd of the session's own), and bench/gpu_check.py's container part."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from remote_agent.containers.host import cdi_devices
from tests.support.container_jobs import (
    TRAIN,
    all_command_lines,
    container_job,
    name_of,
    output,
)
from tests.support.containers import (
    BB_IMAGE,
    PY_IMAGE,
    cdi_turn,
    fake_cdi_gpus,
)
from tests.support.jobs import launch, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, AgentError


def test_gpus_the_runtime_cannot_pass_are_refused_in_one_line(
    podman_images: dict[str, str], client: AgentClient, workdir: Path
) -> None:
    with cdi_turn(exclusive=False):
        if cdi_devices():
            pytest.skip("this machine has CDI specs: its GPUs can be passed")
        with pytest.raises(AgentError) as err:
            container_job(client, workdir, ["true"], image=BB_IMAGE, runtime={"gpus": ["0"]})
    message = str(err.value)
    assert "spec.runtime.gpus" in message and "CDI" in message and "\n" not in message


@pytest.mark.slow
def test_gpus_pass_as_cdi_devices_and_cuda_visible_devices_counts_from_zero_inside(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    with fake_cdi_gpus(2):
        script = 'echo "gpu0=${FAKE_GPU_0:-absent} gpu1=${FAKE_GPU_1:-absent} cvd=$CUDA_VISIBLE_DEVICES"'
        job = container_job(
            client, workdir, ["sh", "-c", script], image=BB_IMAGE, env={"CUDA_VISIBLE_DEVICES": "1"}
        )
        end = wait_state(client, job["id"], {"exited", "failed"}, timeout=60)
    assert end["state"] == "exited", output(agent_dir, job["id"])
    # The job's GPU 1 (its CUDA_VISIBLE_DEVICES on the host) and only it, numbered 0 inside.
    assert "gpu0=absent gpu1=present cvd=0" in output(agent_dir, job["id"])


@pytest.fixture
def docker_host(dockerd: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Set before the agent starts (list it before `client`): its supervisors reach this dockerd."""
    monkeypatch.setenv("DOCKER_HOST", dockerd)
    return dockerd


def docker_containers(name: str, host: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"name={name}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCKER_HOST": host},
        check=True,
    )
    return out.stdout.split()


@pytest.mark.slow
def test_with_docker_a_stop_checkpoints_through_sh_c_and_nothing_is_left(
    docker_host: str, client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    (workdir / "train.py").write_text(TRAIN)
    job = launch(
        client,
        workdir,
        ["sh", "-c", "python3 train.py; echo after"],
        runtime={"image": PY_IMAGE, "runtime": "docker"},
        env={"SECRET_TOKEN": "hunter2-docker"},
    )
    wait_for(lambda: '"loss"' in output(agent_dir, job["id"]), timeout=60, what="the first loss line")
    assert "hunter2-docker" not in all_command_lines()
    final = client.request("stop", job=job["id"], node="0", grace=60, timeout=90)
    assert final["state"] == "stopped", output(agent_dir, job["id"])
    assert (workdir / "ckpt.txt").read_text().startswith("step ")
    assert (workdir / "ckpt.txt").stat().st_uid == os.getuid()  # --user: the files are the user's
    wait_for(lambda: not docker_containers(name_of(job), docker_host), what="no docker container left")


@pytest.mark.slow  # (the session's dockerd starts in seconds)
def test_with_docker_gpus_without_the_nvidia_hook_are_refused(
    docker_host: str, client: AgentClient, workdir: Path
) -> None:
    if shutil.which("nvidia-container-runtime-hook"):
        pytest.skip("this machine has the NVIDIA hook")
    with pytest.raises(AgentError, match="nvidia-container-runtime-hook is not on PATH"):
        launch(client, workdir, ["true"], runtime={"image": BB_IMAGE, "runtime": "docker", "gpus": ["0"]})


@pytest.mark.slow
def test_gpu_checks_container_part_runs_a_gpudeck_container_job(
    podman_images: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench/gpu_check.py's `container` part, here with a fake nvidia.com/gpu CDI spec whose device
    mounts a fake nvidia-smi (the real one runs where a device machine is lent)."""
    from bench.gpucheck.context import Context
    from bench.gpucheck.part_container import container_job as container_part

    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "GPU 0: Fake H100 (UUID: GPU-fake)"\n')
    smi.chmod(0o755)
    spec = {
        "cdiVersion": "0.3.0",
        "kind": "nvidia.com/gpu",
        "devices": [
            {
                "name": "0",
                "containerEdits": {
                    "mounts": [
                        {
                            "hostPath": str(smi),
                            "containerPath": "/usr/bin/nvidia-smi",
                            "options": ["ro", "bind"],
                        }
                    ]
                },
            }
        ],
    }
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("DOCKER_HOST", raising=False)  # a docker without its daemon: the part takes podman
    ctx = Context(quick=True, tmp=tmp_path, facts={}, options={"container_image": PY_IMAGE})
    ctx.deadline = time.monotonic() + 120
    with cdi_turn(exclusive=True):
        path = Path("/etc/cdi/gpudeck-test-nvidia.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(spec))
        try:
            result = container_part(ctx)
        finally:
            path.unlink()
    assert result.status == "ok", result
    assert "Fake H100" in result.number and "nothing left" in result.reason
