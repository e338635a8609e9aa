"""`gpudeck run --requirements` end to end through the real CLI, on the pip path (uv hidden from the
job's PATH): `python -m venv` + pip, offline from a wheel directory or a private index on
127.0.0.1, as the user would set them up (`--env PIP_…`). Each build is a venv with pip (seconds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remote_agent.pyenv.build import READY_NAME, envs_root
from tests.conftest import gpudeck
from tests.support.waiting import wait_for
from tests.support.wheels import job_path, make_index, make_wheel, serve_index

pytestmark = pytest.mark.slow
SHOW = "import gdtiny, sys; print('VERSION', gdtiny.VERSION, 'PREFIX', sys.prefix)"


def finished(job_id: str, env: dict[str, str]) -> dict:
    def ended() -> dict | None:
        jobs = json.loads(gpudeck("ps", "--all", "--json", env=env).stdout)
        job = next(j for j in jobs if j["id"] == job_id)
        return job if job["state"] in ("exited", "failed", "stopped", "killed") else None

    return wait_for(ended, timeout=120, interval=0.2, what=f"job {job_id} to end")


def logs(job_id: str, env: dict[str, str]) -> str:
    return gpudeck("logs", job_id, env=env).stdout


def run(workdir: Path, env: dict[str, str], *args: str) -> str:
    done = gpudeck("run", *args, cwd=workdir, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_pip_builds_from_a_wheel_directory_and_the_next_job_reuses_it(gpudeck_home, workdir, tmp_path):
    make_wheel(tmp_path / "wheels", "gdtiny", "0.1")
    (workdir / "requirements.txt").write_text("gdtiny==0.1\n")
    env = {"PATH": job_path(tmp_path / "bin")}  # no uv: venv + pip
    offline = ("--env", "PIP_NO_INDEX=1", "--env", f"PIP_FIND_LINKS={tmp_path / 'wheels'}")
    first = run(workdir, env, "--requirements", "auto", *offline, "--", "python3", "-c", SHOW)
    job = finished(first, env)
    text = logs(first, env)
    assert job["state"] == "exited", text
    key = job["environment"]["key"]
    env_dir = envs_root(gpudeck_home / "local-agent") / key
    assert job["environment"]["source"] == "requirements.txt"
    assert f"building environment {key}" in text and "with pip" in text
    assert "Successfully installed gdtiny-0.1" in text  # pip's own output is the job's
    assert f"VERSION 0.1 PREFIX {env_dir}" in text
    assert (env_dir / "bin" / "pip").exists()  # a pip-made environment has its own pip
    before = os.stat(env_dir / READY_NAME)
    inspect = gpudeck("inspect", first, env=env).stdout
    assert f"environment: {key} from requirements.txt" in inspect

    second = run(workdir, env, "--requirements", "requirements.txt", *offline, "--", "python3", "-c", SHOW)
    job2 = finished(second, env)
    text2 = logs(second, env)
    assert job2["state"] == "exited" and job2["environment"]["key"] == key, text2
    assert f"reused environment {key}" in text2 and "pip" not in text2.split("reused")[0]
    after = os.stat(env_dir / READY_NAME)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_requirement_pip_cannot_find_is_the_failed_jobs_cause(gpudeck_home, workdir, tmp_path):
    (tmp_path / "wheels").mkdir()
    (workdir / "bad.txt").write_text("nosuchpkg==9\n")
    env = {"PATH": job_path(tmp_path / "bin")}
    job_id = run(
        workdir,
        env,
        "--requirements",
        "bad.txt",
        "--env",
        "PIP_NO_INDEX=1",
        "--env",
        f"PIP_FIND_LINKS={tmp_path / 'wheels'}",
        "--",
        "echo",
        "never-ran",
    )
    job = finished(job_id, env)
    assert job["state"] == "failed" and job["exit_code"] == 97
    assert job["cause"] == "ERROR: No matching distribution found for nosuchpkg==9"
    assert "never-ran" not in logs(job_id, env)


def test_pip_installs_from_a_private_index_set_by_a_setup_line(gpudeck_home, workdir, tmp_path):
    """PIP_INDEX_URL from a setup line (the build runs after them, in the job's environment), and
    the host's `requirements = "auto"` (hosts.toml): no --requirements on the command line."""
    wheel = make_wheel(tmp_path / "wheels", "gdtiny", "0.1")
    make_index(tmp_path / "index", [wheel])
    (workdir / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "1"\ndependencies = ["gdtiny"]\n'
    )
    env = {"PATH": job_path(tmp_path / "bin")}
    with serve_index(tmp_path / "index") as url:
        (gpudeck_home / "hosts.toml").write_text('[hosts.local]\nrequirements = "auto"\n')
        job_id = run(workdir, env, "--setup", f"export PIP_INDEX_URL={url}", "--", "python3", "-c", SHOW)
        job = finished(job_id, env)
    text = logs(job_id, env)
    assert job["state"] == "exited", text
    assert job["environment"]["source"] == "pyproject.toml [project].dependencies"
    assert "VERSION 0.1" in text
