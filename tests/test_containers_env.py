"""`--requirements` with `--image` (issue 28): the environment is built inside the container by the
image's python and uv, on `envs/` mounted from the host, keyed by the image id; a second job reuses
it and `gc` collects it; a failing requirement fails the job with uv's error line. Real podman,
offline wheels. (Over SSH, built by the deployed zipapp: test_containers_ssh.py.)"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

import remote_agent
from remote_agent.containers.command import HostFacts, run_argv
from remote_agent.containers.envfile import ENV_FILE_NAME, MOUNTED_AT
from remote_agent.containers.present import IMAGE_ID_NAME
from remote_agent.containers.wrapper import INIT_SCRIPT
from remote_agent.pyenv.build import READY_NAME, USED_NAME, envs_root
from remote_agent.pyenv.gc import collect_envs
from remote_agent.pyenv.key import environment_key, interpreter
from remote_agent.spec import Environment, JobSpec
from tests.support.container_jobs import assert_nothing_left, container_job, output
from tests.support.containers import HOST_PYTHON, UV_IMAGE
from tests.support.jobs import wait_state
from tests.support.wheels import make_wheel, uv_binary
from tui.remote.client import AgentClient

needs_uv = pytest.mark.skipif(uv_binary() is None, reason="uv is not installed (a dev dependency)")
SHOW = "import gdtiny, sys; print('VERSION', gdtiny.VERSION, 'PREFIX', sys.prefix, 'EXE', sys.executable)"
FINAL = {"exited", "failed", "stopped", "killed"}


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    make_wheel(tmp_path / "wheels", "gdtiny", "0.1")
    return tmp_path / "wheels"


def env_job(client: AgentClient, workdir: Path, wheels: Path, requirements: str) -> dict[str, Any]:
    return container_job(
        client,
        workdir,
        ["python3", "-c", SHOW],
        image=UV_IMAGE,
        runtime={"mounts": [f"{wheels}:{wheels}:ro"]},
        env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)},
        environment={"requirements": requirements, "source": "requirements.txt"},
    )


@pytest.mark.slow
@needs_uv
def test_the_environment_is_built_inside_the_image_keyed_by_it_and_reused(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path, wheels: Path
) -> None:
    first = env_job(client, workdir, wheels, "gdtiny==0.1\n")
    done = wait_state(client, first["id"], FINAL, timeout=120)
    text = output(agent_dir, first["id"])
    assert done["state"] == "exited", text
    key = done["environment"]["key"]
    env_dir = envs_root(agent_dir) / key
    node_dir = agent_dir / "jobs" / first["id"] / "0"
    image_id = (node_dir / IMAGE_ID_NAME).read_text().strip()
    assert f"built environment {key}" in text and "with uv" in text and image_id[7:19] in text
    # The command ran in it, in the container (the env's python links to the image's python).
    assert f"VERSION 0.1 PREFIX {env_dir} EXE {env_dir}/bin/python3" in text
    assert (env_dir / READY_NAME).is_file()  # built on the host's envs/ (gc sees it)
    # The image's python is this machine's very binary: only the image id keeps the keys apart.
    environment = Environment("gdtiny==0.1\n", "requirements.txt")
    identity = interpreter(str(HOST_PYTHON)).identity
    assert key == environment_key(identity, environment, image_id)
    assert key != environment_key(identity, environment)
    assert not (node_dir / ENV_FILE_NAME).exists()  # the values' file goes with the job's end
    assert_nothing_left(first)

    second = env_job(client, workdir, wheels, "gdtiny==0.1\n")
    done2 = wait_state(client, second["id"], FINAL, timeout=120)
    text2 = output(agent_dir, second["id"])
    assert done2["state"] == "exited", text2
    assert f"reused environment {key}" in text2 and "building" not in text2
    assert f"PREFIX {env_dir}" in text2
    assert_nothing_left(second)
    # `gpudeck gc` on the host collects what was built inside (here: unused for an hour).
    for name in (READY_NAME, USED_NAME):
        os.utime(env_dir / name, (time.time() - 3600,) * 2)
    assert collect_envs(agent_dir, 0, [])["removed"] == 1 and not env_dir.exists()


@pytest.mark.slow
@needs_uv
def test_a_failing_requirement_fails_the_container_job_with_uvs_error_line(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path, wheels: Path
) -> None:
    job = env_job(client, workdir, wheels, "gdnosuchpkg==1.0\n")
    done = wait_state(client, job["id"], FINAL, timeout=120)
    text = output(agent_dir, job["id"])
    assert done["state"] == "failed" and done["exit_code"] == 97, text
    # uv's own line, as on the bare host (not the runtime's, not a traceback)
    assert done["cause"].startswith("error: No solution found"), done["cause"]
    assert "gdnosuchpkg was not found" in done["cause"], done["cause"]
    assert "VERSION" not in text  # the command never ran
    key = done["environment"]["key"]
    assert not os.path.exists(envs_root(agent_dir) / key)  # a failed build is never kept
    assert_nothing_left(job)


@pytest.mark.slow
def test_an_image_that_cannot_be_pulled_for_the_environment_fails_the_job_with_the_registrys_line(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    """The host pulls it first (`prepare image`): its progress and its error are the job's."""
    job = container_job(
        client,
        workdir,
        ["echo", "never-ran"],
        image="localhost:1/nothing-here:1",
        environment={"requirements": "gdtiny\n", "source": "requirements.txt"},
    )
    end = wait_state(client, job["id"], FINAL, timeout=60)
    text = output(agent_dir, job["id"])
    assert end["state"] == "failed" and end["exit_code"] == 97, text
    assert text.startswith("Trying to pull localhost:1/nothing-here:1")
    assert end["cause"].startswith("container runtime: Error: initializing source"), end["cause"]
    assert "connection refused" in end["cause"] and "never-ran" not in text
    assert_nothing_left(job)


@pytest.mark.slow
def test_an_environment_python_the_image_lacks_is_the_jobs_cause(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = container_job(
        client,
        workdir,
        ["echo", "never-ran"],
        image=UV_IMAGE,
        environment={"requirements": "gdtiny\n", "python": "python9"},
    )
    end = wait_state(client, job["id"], FINAL, timeout=60)
    assert end["state"] == "failed" and end["exit_code"] == 97, output(agent_dir, job["id"])
    assert end["cause"] == "the image has no python9 (the environment's python)"
    assert_nothing_left(job)


def test_a_container_jobs_environment_step_runs_inside_with_the_images_python(tmp_path: Path) -> None:
    """The run's argv: the agent (read-only), the node's dir and envs/ mounted at their host paths,
    and `prepare env --in-container` in front of the user's argv, under gpudeck's PID 1."""
    node = tmp_path / "agent" / "jobs" / "20260101-000000-abcdef" / "0"
    spec = JobSpec.from_wire(
        {
            "id": "20260101-000000-abcdef",
            "name": "j",
            "argv": ["python3", "t.py"],
            "workdir": str(tmp_path),
            "runtime": {"image": UV_IMAGE, "runtime": "podman"},
            "environment": {"requirements": "gdtiny\n", "python": "python3.11"},
        }
    )
    argv = run_argv(spec, HostFacts(1000, 1000, 8 << 30, 4096, 4096, None), [], node)
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    envs = str(tmp_path / "agent" / "envs")
    assert f"{node}:{node}" in mounts and f"{envs}:{envs}" in mounts
    assert any(
        m.startswith(f"{Path(remote_agent.__file__).parent}:/.gpudeck/agent/") and m.endswith(":ro")
        for m in mounts
    )
    tail = argv[argv.index(UV_IMAGE) :]
    assert tail[:5] == [UV_IMAGE, "-c", INIT_SCRIPT, "gpudeck-init", MOUNTED_AT]
    assert tail[5:7] == ["/bin/sh", "-c"] and tail[-3:] == ["gpudeck-env", "python3", "t.py"]
    script = tail[7]
    assert "python3.11 -c " in script and f"prepare env {node} --in-container --python" in script
    assert 'exec "$@"' in script
    # Without a node dir to mount (never so for a supervised job) the argv is the user's alone.
    assert run_argv(spec, HostFacts(1000, 1000, 8 << 30, 4096, 4096, None), [])[-2:] == ["python3", "t.py"]
