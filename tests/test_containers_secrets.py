"""A container job's variables stay out of the runtime's config (issue 28): they reach gpudeck's
PID 1 through a 0600 env file in the node's dir, mounted read-only, which it sources; `podman
inspect` of the running container shows no value, and once the job has ended no file gpudeck wrote
holds it but the spec."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest

from remote_agent.containers.command import HostFacts, run_argv
from remote_agent.containers.envfile import ENV_FILE_NAME, MOUNTED_AT, write_env_file
from remote_agent.containers.wrapper import INIT_SCRIPT
from remote_agent.spec import JobSpec
from tests.conftest import gpudeck
from tests.support.container_jobs import all_command_lines, assert_nothing_left, output
from tests.support.containers import PY_IMAGE, podman
from tests.support.jobs import wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

TRICKY = 'it\'s $HOME `x` "q" \\ \n second line; export Y=1'
FACTS = HostFacts(1000, 1000, 8 << 30, 4096, 4096, None)


@pytest.mark.parametrize("shell", ["/bin/dash", "/bin/busybox"])
def test_the_env_files_values_read_back_exactly_in_the_images_shells(tmp_path: Path, shell: str) -> None:
    """Sourced as PID 1 sources it (`. FILE`), by dash and busybox sh: quotes, `$`, newlines intact.
    (Not the whole wrapper: outside a container its `kill -1` would reach every process here.)"""
    path = write_env_file(tmp_path, ["TOKEN", "PLAIN"], {"TOKEN": TRICKY, "PLAIN": "v", "OTHER": "no"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    argv = [shell] + (["sh"] if shell.endswith("busybox") else [])
    show = '. "$1"; printf "%s|%s|%s" "$TOKEN" "$PLAIN" "${OTHER-unset}"'
    done = subprocess.run(
        [*argv, "-c", show, "sh", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{TRICKY}|v|unset"
    assert INIT_SCRIPT.startswith('if [ "$1" != - ]; then')  # PID 1 sources its first argument


def test_the_run_passes_no_value_and_names_only_what_a_shell_cannot_export(tmp_path: Path) -> None:
    spec = JobSpec.from_wire(
        {
            "id": "20260101-000000-abcdef",
            "name": "j",
            "argv": ["python3", "t.py"],
            "workdir": str(tmp_path),
            "env": {"TOKEN": "s3cr3t", "a.b": "dotted"},
            "runtime": {"image": PY_IMAGE, "runtime": "podman"},
        }
    )
    argv = run_argv(spec, FACTS, [], tmp_path)
    assert f"{tmp_path / ENV_FILE_NAME}:{MOUNTED_AT}:ro" in argv
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "--env"]
    assert envs == ["a.b"]  # by name: `export a.b=…` is no shell's
    assert not any("s3cr3t" in a for a in argv)
    assert argv[argv.index("gpudeck-init") + 1] == MOUNTED_AT
    # Without the node's dir (no file to mount) every name is passed by name, as before.
    bare = run_argv(spec, FACTS, [])
    assert "TOKEN" in bare and bare[bare.index("gpudeck-init") + 1] == "-"


@pytest.mark.slow
def test_a_secret_is_in_no_runtime_config_and_no_file_but_the_spec(
    podman_images: dict[str, str], client: AgentClient, tmp_path: Path, workdir: Path, agent_dir: Path
) -> None:
    secret = "s3cr3t-" + tmp_path.name[-6:] + "-it's $x"
    run = gpudeck(
        "run",
        "--image",
        PY_IMAGE,
        "--runtime",
        "podman",
        "--env",
        f"TOKEN={secret}",
        "--",
        "python3",
        "-c",
        "import os, sys, time; t = os.environ['TOKEN']; print('len', len(t), 'quote', \"'\" in t, flush=True); time.sleep(60)",
        cwd=workdir,
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    node_dir = agent_dir / "jobs" / job_id / "0"
    wait_for(lambda: "len" in output(agent_dir, job_id), timeout=60, what="the job's output")
    assert f"len {len(secret)} quote True" in output(agent_dir, job_id)  # the value reached the trainer
    name = f"gpudeck-{job_id}-0"
    inspected = podman("container", "inspect", name).stdout
    config_env = json.loads(inspected)[0]["Config"]["Env"]
    assert not [e for e in config_env if e.startswith(("TOKEN=", "GPUDECK_JOB_ID="))], config_env
    assert secret not in inspected
    env_file = node_dir / ENV_FILE_NAME
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert secret not in all_command_lines()

    assert gpudeck("stop", job_id, cwd=workdir).returncode == 0
    wait_state(client, job_id, {"stopped", "exited", "killed"}, timeout=60)
    assert_nothing_left({"id": job_id, "node": "0"})
    assert not env_file.exists()  # the values' file goes with the job
    holders = [
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*")
        if p.is_file() and not p.is_symlink() and secret.encode() in p.read_bytes()
    ]
    assert holders == [str((node_dir / "spec.json").relative_to(tmp_path))], holders
    assert json.loads((node_dir / "spec.json").read_text())["env"]["TOKEN"] == secret
