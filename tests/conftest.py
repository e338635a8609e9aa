from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cleanup import kill_all_jobs
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

ROOT = Path(__file__).resolve().parent.parent
# The real-sshd fixtures (`sshd`, session-wide; `ssh_home`, per test) for the SSH tests.
pytest_plugins = [
    "tests.support.sshd",
    "tests.support.tui",
    "tests.support.containers",
    "tests.support.slurm",
]


@pytest.fixture
def gpudeck_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private GPUDECK_HOME; every job started under it is killed afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("GPUDECK_HOME", str(home))
    # Jobs run under `bash -l`: give them a login profile of our own, not this machine's, whose
    # pyenv rehash waits up to 60 s on a lock that any job killed mid-login leaves behind.
    user_home = tmp_path / "user"
    user_home.mkdir()
    (user_home / ".profile").write_text("export GPUDECK_TEST_LOGIN_PROFILE=read\n")
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("GPUDECK_SSH_HOME", str(user_home))  # ssh reads the passwd home: ours
    monkeypatch.setenv(
        "GPUDECK_SSH_PERSIST", "0"
    )  # no warm connection outliving a test (test_warm_* turn it on)
    yield home
    kill_all_jobs(home / "local-agent")


@pytest.fixture
def agent_dir(gpudeck_home: Path) -> Path:
    return gpudeck_home / "local-agent"


@pytest.fixture
def client(agent_dir: Path) -> Iterator[AgentClient]:
    c = AgentClient(LocalTransport(agent_dir))
    c.connect()
    yield c
    c.close()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


def gpudeck(
    *args: str, cwd: Path | None = None, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real CLI in a fresh interpreter, as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
