"""A container job on the sshd fixture host (issue 28, "Done when": `run --host h --image IMAGE
--sync ./proj -- python -m proj.train`): the synced code runs inside, its loss streams into
`metrics -f`, `stop` makes the trainer inside checkpoint, and nothing is left in the runtime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.support.container_jobs import (
    TRAIN,
)
from tests.support.containers import (
    PY_IMAGE,
    UV_IMAGE,
    conmons_of,
    containers_named,
)
from tests.support.sshd import SSHD, Sshd, SshHome, make_sshd
from tests.support.waiting import wait_for
from tests.support.wheels import make_wheel


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory, podman_images: dict[str, str]) -> Iterator[Sshd]:
    """This module's own sshd: its sessions carry podman's settings (CONTAINERS_CONF…), as a host's
    own configuration would."""
    if not os.path.exists(SSHD):
        pytest.skip("openssh-server is not installed (apt-get install openssh-server; .ci/run does)")
    root = tmp_path_factory.mktemp("sshd-podman")
    settings = " ".join(f"{k}={v}" for k, v in podman_images.items())
    server = make_sshd(
        root, extra=[f"SetEnv HOME={root / 'remote-home'} GPUDECK_TEST_SSHD=podman {settings}"]
    )
    yield server
    server.stop()


@pytest.mark.slow
def test_over_ssh_a_container_jobs_loss_streams_stop_checkpoints_and_nothing_is_left(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    project = tmp_path / "proj"
    (project / "proj").mkdir(parents=True)
    (project / "proj" / "__init__.py").write_text("")
    (project / "proj" / "train.py").write_text(TRAIN)
    check = gpudeck("hosts", "check", "box", cwd=tmp_path)
    assert check.returncode == 0 and "podman 4." in check.stdout, check.stdout + check.stderr
    run = gpudeck(
        "run",
        "--host",
        "box",
        "--image",
        PY_IMAGE,
        "--sync",
        "./proj",
        "--",
        "python3",
        "-m",
        "proj.train",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    # `metrics -f` over SSH: the loss the trainer prints inside the container, point by point.
    follower = subprocess.Popen(
        [sys.executable, "-m", "tui", "metrics", "-f", "--json", job_id],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        points = [json.loads(follower.stdout.readline()) for _ in range(3)]
        assert [p["values"]["loss"] for p in points] == [1.0, 0.5, 0.3333], points
        stop = gpudeck("stop", job_id, cwd=tmp_path, timeout=120)
        assert stop.returncode == 0, stop.stderr
        rest, _ = follower.communicate(timeout=60)  # it ends with the job
    finally:
        follower.kill()
    assert follower.returncode == 0 and '"loss"' in rest
    work = ssh_home.agent_dir / "work" / job_id  # the snapshot, bind-mounted as the container's cwd
    assert (work / "ckpt.txt").read_text().startswith("step ") and not (project / "ckpt.txt").exists()
    ended = gpudeck("inspect", job_id, "--json", cwd=tmp_path)
    assert json.loads(ended.stdout)["state"] == "stopped"
    wait_for(
        lambda: not containers_named(f"gpudeck-{job_id}") and not conmons_of(f"gpudeck-{job_id}"),
        what="nothing left",
    )


@pytest.mark.slow
def test_over_ssh_requirements_build_inside_the_image_by_the_deployed_zipapp(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    """The agent that builds inside is the host's own zipapp, mounted read-only into the container."""
    ssh_home.trust()
    ssh_home.add_host()
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "gdtiny", "0.1")
    (tmp_path / "requirements.txt").write_text("gdtiny==0.1\n")
    show = "import gdtiny, sys; print('VERSION', gdtiny.VERSION, 'PREFIX', sys.prefix)"
    run = gpudeck(
        "run",
        "--host",
        "box",
        "--image",
        UV_IMAGE,
        "--requirements",
        "requirements.txt",
        "--mount",
        f"{wheels}:{wheels}:ro",
        "--env",
        "PIP_NO_INDEX=1",
        "--env",
        f"PIP_FIND_LINKS={wheels}",
        "--",
        "python3",
        "-c",
        show,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()

    def ended() -> dict[str, Any] | None:
        shown = json.loads(gpudeck("inspect", job_id, "--json", cwd=tmp_path).stdout)
        return shown if shown["state"] in ("exited", "failed") else None

    shown = wait_for(ended, timeout=120, what="the job's end")
    text = (ssh_home.agent_dir / "jobs" / job_id / "0" / "output.log").read_text()
    assert shown["state"] == "exited", text
    key = shown["environment"]["key"]
    assert f"built environment {key}" in text and ", image " in text
    assert f"VERSION 0.1 PREFIX {(ssh_home.agent_dir / 'envs' / key).resolve()}" in text
    wait_for(lambda: not containers_named(f"gpudeck-{job_id}"), what="nothing left")
