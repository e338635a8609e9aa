"""`run --requirements` on an SSH host (a real sshd on 127.0.0.1): the requirement file is read on
the client and its text travels in the spec; the shipped agent (the zipapp) builds the environment
on the host, where the file never was; `logs -f` shows the build, then the command in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import SshHome
from tests.support.wheels import job_path, make_wheel, uv_binary

pytestmark = pytest.mark.slow
SHOW = "import gdtiny, sys; print('VERSION', gdtiny.VERSION, 'PREFIX', sys.prefix)"


def test_an_ssh_hosts_job_runs_in_the_environment_built_there(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    make_wheel(tmp_path / "wheels", "gdtiny", "0.1")
    client_dir = tmp_path / "project"
    client_dir.mkdir()
    (client_dir / "requirements.txt").write_text("gdtiny==0.1\n")
    host_path = job_path(tmp_path / "host-bin", uv_binary())  # uv where installed: seconds saved
    args = [
        "run",
        "--host",
        "box",
        "--requirements",
        "auto",
        "--setup",
        f"export PATH={host_path}",
        "--env",
        "PIP_NO_INDEX=1",
        "--env",
        f"PIP_FIND_LINKS={tmp_path / 'wheels'}",
        "--",
        "python3",
        "-c",
        SHOW,
    ]
    first = gpudeck(*args, cwd=client_dir)
    assert first.returncode == 0, first.stderr
    follow = gpudeck("logs", "-f", first.stdout.strip(), cwd=client_dir, timeout=120)
    assert follow.returncode == 0, follow.stdout + follow.stderr
    envs = ssh_home.agent_dir / "envs"
    (env_dir,) = [p for p in envs.iterdir() if p.is_dir()]
    assert f"built environment {env_dir.name} (requirements.txt" in follow.stdout
    assert f"VERSION 0.1 PREFIX {env_dir}" in follow.stdout

    second = gpudeck(*args, cwd=client_dir)
    follow2 = gpudeck("logs", "-f", second.stdout.strip(), cwd=client_dir, timeout=120)
    assert follow2.returncode == 0 and f"reused environment {env_dir.name}" in follow2.stdout
    shown = json.loads(gpudeck("inspect", "--json", second.stdout.strip(), cwd=client_dir).stdout)
    assert shown["environment"] == {"source": "requirements.txt", "key": env_dir.name}
