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

from remote_agent.containers.envfile import ENV_FILE_NAME
from remote_agent.containers.present import IMAGE_ID_NAME
from remote_agent.pyenv.build import READY_NAME, USED_NAME, envs_root
from remote_agent.pyenv.gc import collect_envs
from remote_agent.pyenv.key import environment_key, interpreter
from remote_agent.spec import Environment
from tests.support.container_jobs import assert_nothing_left, container_job, output
from tests.support.containers import HOST_PYTHON, UV_IMAGE
from tests.support.jobs import wait_state
from tests.support.wheels import make_wheel, uv_binary
from tui.remote.client import AgentClient

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(uv_binary() is None, reason="uv is not installed (a dev dependency)"),
]
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
