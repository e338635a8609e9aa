"""Image pulls (issue 28): a missing image is pulled from a local registry with its progress as the
job's first output; an image that cannot be pulled fails the job with the registry's error line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.container_jobs import (
    assert_nothing_left,
    container_job,
    output,
)
from tests.support.containers import (
    BB_IMAGE,
    local_registry,
    podman,
)
from tests.support.jobs import wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient


@pytest.mark.slow
def test_an_image_that_cannot_be_pulled_fails_the_job_with_the_registrys_error_line(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = container_job(client, workdir, ["true"], image="localhost:1/nothing-here:1")
    end = wait_state(client, job["id"], {"exited", "failed"}, timeout=60)
    assert end["state"] == "failed"
    assert output(agent_dir, job["id"]).startswith("Trying to pull localhost:1/nothing-here:1")
    assert end["cause"].startswith(
        "container runtime: Error: initializing source docker://localhost:1/nothing-here:1"
    )
    assert "connection refused" in end["cause"]
    assert_nothing_left(job)


@pytest.mark.slow
def test_a_missing_image_is_pulled_with_its_progress_as_the_first_output(
    podman_images: dict[str, str], gpudeck_home: Path, workdir: Path, agent_dir: Path, tmp_path: Path
) -> None:
    with local_registry(tmp_path) as (address, env):
        image = f"{address}/bb-{os.urandom(3).hex()}:1"
        pushed = podman("push", "--tls-verify=false", BB_IMAGE, image, check=False)
        assert pushed.returncode == 0, pushed.stderr
        run = gpudeck(
            "run", "--image", image, "--runtime", "podman", "--", "echo", "trained", cwd=workdir, env=env
        )
        assert run.returncode == 0, run.stderr
        job_id = run.stdout.strip()
        log = agent_dir / "jobs" / job_id / "0" / "output.log"
        wait_for(lambda: "trained" in log.read_text(), timeout=60, what="the command's line after the pull")
        text = log.read_text()
        assert text.startswith(f"Trying to pull {image}..."), text
        assert text.index("Copying blob") < text.index("trained")

        def digest() -> str | None:
            shown = json.loads(gpudeck("inspect", job_id, "--json", cwd=workdir, env=env).stdout)
            return (shown.get("container") or {}).get("digest")

        assert wait_for(digest, what="the registry digest").startswith("sha256:")
    podman("rmi", "--force", image, check=False)
