"""Cached environments through real jobs of a local agent, built by uv (fast; a dev dependency) from tiny wheels made
here, offline: reuse, a failing requirement's cause, jobs starting together, a half-built leftover,
and pip's index settings reaching uv. The pip path (uv hidden) is in test_pyenv_pip.py."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from remote_agent.pyenv.build import READY_NAME, WAITING, envs_root
from remote_agent.pyenv.key import environment_key, interpreter
from remote_agent.spec import Environment
from tests.support.jobs import launch, wait_state
from tests.support.waiting import wait_for
from tests.support.wheels import job_path, make_index, make_wheel, serve_index, uv_binary
from tui.remote.client import AgentClient

pytestmark = pytest.mark.slow  # real jobs building environments with uv: about a second each

UV = uv_binary()
needs_uv = pytest.mark.skipif(UV is None, reason="uv is not installed (a dev dependency: pip install uv)")
SHOW = "import gdtiny, sys; print('VERSION', gdtiny.VERSION, 'PREFIX', sys.prefix)"
FINAL = {"exited", "failed", "stopped", "killed"}


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    make_wheel(tmp_path / "wheels", "gdtiny", "0.1")
    return tmp_path / "wheels"


@pytest.fixture
def path(tmp_path: Path) -> str:
    return job_path(tmp_path / "bin", UV)


def output(agent_dir: Path, job: dict) -> str:
    return (agent_dir / "jobs" / job["id"] / "0" / "output.log").read_text()


def env_job(client: AgentClient, workdir: Path, path: str, env: dict, requirements: str, argv=None) -> dict:
    return launch(
        client,
        workdir,
        argv or ["python3", "-c", SHOW],
        path=path,
        env=env,
        environment={"requirements": requirements, "source": "requirements.txt"},
    )


def offline(wheels: Path) -> dict:
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}


@needs_uv
def test_the_second_job_reuses_the_environment_the_first_built(client, agent_dir, workdir, path, wheels):
    first = env_job(client, workdir, path, offline(wheels), "gdtiny==0.1\n")
    done = wait_state(client, first["id"], FINAL)
    text = output(agent_dir, first)
    assert done["state"] == "exited", text
    key = done["environment"]["key"]
    env_dir = envs_root(agent_dir) / key
    assert f"built environment {key}" in text and "with uv" in text
    assert f"VERSION 0.1 PREFIX {env_dir}" in text  # the command ran inside it
    assert done["environment"] == {"source": "requirements.txt", "key": key}
    before = os.stat(env_dir / READY_NAME)

    second = env_job(client, workdir, path, offline(wheels), "gdtiny==0.1\n")
    done2 = wait_state(client, second["id"], FINAL)
    text2 = output(agent_dir, second)
    assert done2["state"] == "exited", text2
    assert f"reused environment {key}" in text2 and "building" not in text2
    assert f"PREFIX {env_dir}" in text2
    after = os.stat(env_dir / READY_NAME)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rebuilt


@needs_uv
def test_other_requirements_get_another_environment(client, agent_dir, workdir, path, wheels):
    make_wheel(wheels, "gdtiny", "0.2")
    jobs = [env_job(client, workdir, path, offline(wheels), f"gdtiny=={v}\n") for v in ("0.1", "0.2")]
    done = [wait_state(client, j["id"], FINAL) for j in jobs]
    assert [d["state"] for d in done] == ["exited", "exited"]
    assert done[0]["environment"]["key"] != done[1]["environment"]["key"]
    assert "VERSION 0.2" in output(agent_dir, jobs[1])


@needs_uv
def test_a_requirement_no_index_has_fails_the_job_with_uvs_error(client, agent_dir, workdir, path, wheels):
    job = env_job(client, workdir, path, offline(wheels), "nosuchpkg==9\n", ["echo", "never-ran"])
    done = wait_state(client, job["id"], FINAL)
    assert done["state"] == "failed" and done["exit_code"] == 97
    assert "nosuchpkg" in done["cause"] and "error" in done["cause"].lower(), done["cause"]
    assert "never-ran" not in output(agent_dir, job)
    key = done["environment"]["key"]
    assert not (envs_root(agent_dir) / key).exists()  # a failed build leaves nothing to reuse


@needs_uv
def test_jobs_starting_together_build_the_environment_once(client, agent_dir, workdir, path, wheels):
    requirements = "gdtiny==0.1\n"
    key = environment_key(
        interpreter(str(Path(path.split(":")[0]) / "python3")).identity,
        Environment(requirements=requirements, source="requirements.txt"),
    )
    envs = envs_root(agent_dir)
    envs.mkdir(parents=True, exist_ok=True)
    # Hold the build lock as a builder would, so both jobs surely meet it.
    fd = os.open(envs / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        jobs = [env_job(client, workdir, path, offline(wheels), requirements) for _ in range(2)]
        wait_for(lambda: all(WAITING in output(agent_dir, j) for j in jobs), what="both jobs waiting")
    finally:
        os.close(fd)
    done = [wait_state(client, j["id"], FINAL) for j in jobs]
    texts = [output(agent_dir, j) for j in jobs]
    assert [d["state"] for d in done] == ["exited", "exited"], texts
    assert sum(f"built environment {key}" in t for t in texts) == 1, texts
    assert sum(f"reused environment {key}" in t for t in texts) == 1, texts
    assert all(t.count(WAITING) == 1 for t in texts)


@needs_uv
def test_a_half_built_environment_is_never_used(client, agent_dir, workdir, path, wheels):
    requirements = "gdtiny==0.1\n"
    key = environment_key(
        interpreter(str(Path(path.split(":")[0]) / "python3")).identity,
        Environment(requirements=requirements, source="requirements.txt"),
    )
    leftover = envs_root(agent_dir) / key
    (leftover / "bin").mkdir(parents=True)
    os.symlink("/usr/bin/true", leftover / "bin" / "python")  # looks usable, but has no ready marker
    (leftover / "half-written").write_text("x")
    job = env_job(client, workdir, path, offline(wheels), requirements)
    done = wait_state(client, job["id"], FINAL)
    text = output(agent_dir, job)
    assert done["state"] == "exited", text
    assert f"removing a half-built environment: {key}" in text and f"built environment {key}" in text
    assert not (leftover / "half-written").exists() and (leftover / READY_NAME).is_file()
    assert f"VERSION 0.1 PREFIX {leftover}" in text


@needs_uv
def test_uv_is_given_pips_index_url(client, agent_dir, workdir, path, wheels, tmp_path):
    """A private index set up for pip (PIP_INDEX_URL) is the one uv uses: uv reads no PIP_* itself."""
    make_index(tmp_path / "index", [wheels / "gdtiny-0.1-py3-none-any.whl"])
    with serve_index(tmp_path / "index") as url:
        env = {"PIP_INDEX_URL": url, "UV_NO_CACHE": "1"}
        job = env_job(client, workdir, path, env, "gdtiny==0.1\n")
        done = wait_state(client, job["id"], FINAL)
    text = output(agent_dir, job)
    assert done["state"] == "exited", text
    assert "VERSION 0.1" in text


def test_a_stop_during_the_build_ends_the_build_and_leaves_nothing_ready(
    client, agent_dir, workdir, tmp_path
):
    """The stop signal reaches the job's script, not the build step: the step must still end its
    tool at once (here a uv that never finishes), not hold the stop for the grace period."""
    bin_dir = tmp_path / "slow-bin"
    path = job_path(bin_dir)
    mark = tmp_path / "uv-was-told-to-stop"
    (bin_dir / "uv").write_text(
        f"#!/bin/sh\ntrap 'echo terminated > {mark}; kill $!; exit 143' TERM\n"
        'echo "slow uv $1"\nsleep 300 &\nwait\n'
    )
    (bin_dir / "uv").chmod(0o755)
    job = env_job(client, workdir, path, {}, "gdtiny==0.1\n", ["echo", "never-ran"])
    wait_for(lambda: "slow uv venv" in output(agent_dir, job), what="the build to start")
    final = client.request("stop", job=job["id"], node="0", grace=3600, timeout=60)
    assert final["state"] == "stopped"
    assert mark.read_text() == "terminated\n"  # asked to end, not killed at the grace's end
    key = final["environment"]["key"]
    assert not (envs_root(agent_dir) / key / READY_NAME).exists()
    assert "never-ran" not in output(agent_dir, job)
