from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.bytecode import cache_bytecode
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


def pytest_configure(config: pytest.Config) -> None:
    """Bytecode cached, as an installed gpudeck has it. This machine (and CI's) sets
    PYTHONDONTWRITEBYTECODE, so every test module, every gpudeck command a test starts and every
    local agent compiled its imports from source each time (~150 ms a command; the everyday subset
    took 84 s, 64 s with the cache). The .pyc files go to a folder of the user's own, outside the
    checkout (bench/bytecode.py). GPUDECK_TEST_PYCACHE=0 keeps the environment's setting
    (bench/mutants.py: a mutant restored within its second would load the mutated .pyc)."""
    if os.environ.get("GPUDECK_TEST_PYCACHE") == "0" or hasattr(config, "workerinput"):
        return  # (an xdist worker already started with what the controller set)
    folder = Path.home() / ".cache" / "gpudeck-tests" / "pycache"
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder.parent, 0o700)  # others must not plant bytecode that our tests would run
    cache_bytecode(folder)
    sys.dont_write_bytecode, sys.pycache_prefix = False, str(folder)  # this process too (serial runs)


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
