"""Container jobs through the CLI (issue 28): --image and its companion flags, hosts.toml's image,
`inspect` with the image id a restart pins, secrets kept off command lines, and a 2-node job and its
`scale +1` in one image id."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.support.container_jobs import (
    all_command_lines,
    assert_nothing_left,
    output,
)
from tests.support.containers import (
    BB_IMAGE,
)
from tests.support.jobs import journal
from tests.support.waiting import wait_for
from tui.actions.node_spec import JobTerms, node_spec
from tui.actions.options import LaunchOptions, check
from tui.errors import GpudeckError


@pytest.mark.slow
def test_cli_image_job_inspect_shows_the_image_id_a_restart_runs_it_and_secrets_stay_out(
    podman_images: dict[str, str], gpudeck_home: Path, workdir: Path, agent_dir: Path
) -> None:
    secret = "s3cr3t-" + os.urandom(4).hex()
    run = gpudeck(
        "run",
        "--image",
        BB_IMAGE,
        "--runtime",
        "podman",
        "--env",
        f"TOKEN={secret}",
        "--",
        "sh",
        "-c",
        'echo "token=${#TOKEN}"; echo "loss=0.5"; sleep 30',
        cwd=workdir,
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    wait_for(lambda: "loss=0.5" in output(agent_dir, job_id), timeout=60, what="the job's output")
    assert f"token={len(secret)}" in output(agent_dir, job_id)  # the value reached the process
    assert secret not in all_command_lines()  # never on a command line (ps)

    def inspected() -> str:
        text = gpudeck("inspect", job_id, cwd=workdir).stdout
        return text if "id sha256:" in text else ""

    shown = wait_for(inspected, what="inspect to show the image id")
    assert f"image: {BB_IMAGE} (runtime podman, id sha256:" in shown
    as_json = gpudeck("inspect", job_id, "--json", cwd=workdir).stdout
    assert secret not in shown + as_json + gpudeck("ps", "--json", cwd=workdir).stdout
    image_id = json.loads(as_json)["container"]["image_id"]
    assert gpudeck("stop", job_id, cwd=workdir).returncode == 0
    restart = gpudeck("restart", job_id, cwd=workdir)
    assert restart.returncode == 0, restart.stderr
    new_id = next(w for w in restart.stdout.split() if w.count("-") == 2 and w != job_id)
    spec = json.loads((agent_dir / "jobs" / new_id / "0" / "spec.json").read_text())
    assert spec["runtime"]["digest"] == image_id  # the same bytes, whatever the tag says now
    assert gpudeck("kill", new_id, cwd=workdir).returncode == 0
    for job in (job_id, new_id):
        assert_nothing_left({"id": job})


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"image": BB_IMAGE, "mounts": ("data:/data",)}, "--mount: expected HOST:CONTAINER[:ro]"),
        ({"image": BB_IMAGE, "mounts": ("/a:/b:rx",)}, "--mount: the third part is ro or rw"),
        ({"image": BB_IMAGE, "shm_size": "lots"}, "--shm-size: expected a size"),
        ({"image": BB_IMAGE, "ipc": "shareable"}, "--ipc: private or host"),
        ({"image": BB_IMAGE, "container_runtime": "lxc"}, "--runtime: auto, docker or podman"),
        ({"image": "-v /etc:/x"}, "--image: expected an image reference"),
    ],
)
def test_bad_container_options_are_one_line_naming_the_flag(changes: dict[str, Any], said: str) -> None:
    with pytest.raises(GpudeckError) as err:
        check(LaunchOptions(argv=("true",), **changes))
    assert said in str(err.value) and "\n" not in str(err.value) and err.value.code == 2


def test_container_flags_without_an_image_need_one(gpudeck_home: Path) -> None:
    terms = JobTerms.of_options(LaunchOptions(argv=("true",), mounts=("/a:/b",)), "20261205-000000-abcdef")
    with pytest.raises(GpudeckError, match="need --image"):
        node_spec(None, terms, "local")


@pytest.mark.slow
def test_a_bad_container_option_is_a_usage_error_of_the_cli(gpudeck_home: Path, workdir: Path) -> None:
    run = gpudeck("run", "--image", BB_IMAGE, "--mount", "data:/data", "--", "true", cwd=workdir)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "--mount:" in run.stderr, run.stderr


@pytest.mark.slow
def test_a_hosts_image_and_runtime_in_hosts_toml_apply_to_its_jobs(
    podman_images: dict[str, str], gpudeck_home: Path, workdir: Path, agent_dir: Path
) -> None:
    (gpudeck_home / "hosts.toml").write_text(
        f'[hosts.local]\nimage = "{BB_IMAGE}"\ncontainer_runtime = "podman"\n'
    )
    run = gpudeck("run", "--", "sh", "-c", "echo in=$GPUDECK_JOB_NAME", cwd=workdir)
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    spec = json.loads((agent_dir / "jobs" / job_id / "0" / "spec.json").read_text())
    assert spec["runtime"]["image"] == BB_IMAGE and spec["runtime"]["runtime"] == "podman"
    wait_for(lambda: "in=" in output(agent_dir, job_id), timeout=60, what="its output")
    (gpudeck_home / "hosts.toml").write_text('[hosts.local]\nimage = "-bad"\n')
    bad = gpudeck("run", "--", "true", cwd=workdir)
    assert bad.returncode == 2 and "[hosts.local] image/container_runtime" in bad.stderr, bad.stderr


def node_specs_and_images(agent_dir: Path, job_id: str) -> dict[str, tuple[str | None, str | None]]:
    """node → (the spec's pinned digest, the image id its container ran)."""
    out = {}
    for node_dir in sorted((agent_dir / "jobs" / job_id).iterdir()):
        spec = json.loads((node_dir / "spec.json").read_text())
        ran = [
            r["data"].get("image_id")
            for r in journal(agent_dir, job_id, node_dir.name)
            if r.get("event") == "container_image"
        ]
        out[node_dir.name] = (spec["runtime"].get("digest"), ran[0] if ran else None)
    return out


@pytest.mark.slow
def test_a_two_node_job_and_its_scale_up_run_one_image(
    podman_images: dict[str, str], gpudeck_home: Path, workdir: Path, agent_dir: Path
) -> None:
    # A checkpoint dir written inside the container: the resize checks it on the host (bind mount).
    script = (
        'echo "rank=$GPUDECK_NODE_RANK of $GPUDECK_NNODES"; mkdir -p ckpt; touch ckpt/c$GPUDECK_NODE_RANK;'
        ' trap "exit 0" TERM; while :; do sleep 0.1; done'
    )
    run = gpudeck(
        "run",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--image",
        BB_IMAGE,
        "--runtime",
        "podman",
        "--",
        "sh",
        "-c",
        script,
        "node",
        "--checkpoint-dir",
        "ckpt",
        cwd=workdir,  # (a resize needs one)
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()

    def all_ran(job: str, count: int) -> dict[str, tuple[str | None, str | None]] | None:
        found = node_specs_and_images(agent_dir, job)
        return found if len(found) == count and all(image for _, image in found.values()) else None

    first = wait_for(lambda: all_ran(job_id, 2), timeout=60, what="both nodes' containers")
    assert len({image for _, image in first.values()}) == 1
    for node in ("0", "1"):
        log = agent_dir / "jobs" / job_id / node / "output.log"
        said = f"rank={node} of 2"
        wait_for(lambda log=log, said=said: said in log.read_text(), timeout=30, what=said)
    scaled = gpudeck("scale", job_id, "+1", "--json", cwd=workdir, timeout=120)
    assert scaled.returncode == 0, scaled.stderr
    new_id = json.loads(scaled.stdout)["id"]
    after = wait_for(lambda: all_ran(new_id, 3), timeout=60, what="three nodes' containers")
    (image_id,) = {image for _, image in first.values()}
    assert {digest for digest, _ in after.values()} == {image_id}  # every new node pinned to it
    assert {image for _, image in after.values()} == {image_id}
    assert gpudeck("kill", new_id, cwd=workdir).returncode == 0
    for job in (job_id, new_id):
        assert_nothing_left({"id": job})  # every node's name starts gpudeck-<id>-


def test_a_node_on_a_new_host_runs_the_jobs_image_by_its_registry_digest(gpudeck_home: Path) -> None:
    from tui.actions.container_node import carried_runtime, pinned_reference

    digest = "sha256:" + "ab" * 32
    assert pinned_reference("reg:5000/team/py:2.4", digest) == f"reg:5000/team/py@{digest}"
    assert pinned_reference("py", digest) == f"py@{digest}"
    assert pinned_reference("py:1", None) == "py:1"
    first = {
        "runtime": {
            "image": "reg:5000/py:1",
            "runtime": "podman",
            "digest": "sha256:" + "cd" * 32,
            "shm_size": "8g",
        },
        "container": {"image_id": "sha256:" + "cd" * 32, "digest": digest},
    }
    carried = carried_runtime(first, {"container_runtime": "docker"})
    assert carried is not None
    assert (carried.image, carried.digest, carried.runtime, carried.shm_size) == (
        f"reg:5000/py@{digest}",
        None,
        "docker",
        "8g",
    )
    assert carried_runtime({"runtime": None}, {}) is None
