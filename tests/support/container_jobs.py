"""Container jobs for the tests (issue 28): launched through a real agent client, read back, and
checked for leftovers in the runtime (containers in any state, conmon processes)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.support.containers import (
    PY_IMAGE,
    conmons_of,
    containers_named,
)
from tests.support.jobs import launch
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

TRAIN = """\
import json, os, signal, sys, time
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
for step in range(1, 100000):
    print(json.dumps({"step": step, "loss": round(1.0 / step, 4)}), flush=True)
    if stop:
        with open("ckpt.txt", "w") as f:
            f.write("step %d\\n" % step)
        print(json.dumps({"event": "checkpoint_saved", "step": step}), flush=True)
        sys.exit(0)
    time.sleep(0.05)
"""


def output(agent_dir: Path, job_id: str) -> str:
    return (agent_dir / "jobs" / job_id / "0" / "output.log").read_text(errors="replace")


def name_of(job: dict[str, Any]) -> str:
    """Node 0's container name, or every node's prefix for a job without a node."""
    return f"gpudeck-{job['id']}-{job['node']}" if "node" in job else f"gpudeck-{job['id']}-"


def nothing_left(job: dict[str, Any]) -> bool:
    return not containers_named(name_of(job)) and not conmons_of(name_of(job))


def assert_nothing_left(job: dict[str, Any]) -> None:
    """No container (any state) and no conmon of the job's node remain."""
    try:
        wait_for(lambda: nothing_left(job), what="no container, no conmon")
    except AssertionError:
        raise AssertionError(
            f"left: containers {containers_named(name_of(job))}, conmons {conmons_of(name_of(job))}"
        ) from None


def container_job(
    client: AgentClient, workdir: Path, argv: list[str], image: str = PY_IMAGE, **extra: Any
) -> dict[str, Any]:
    runtime = {"image": image, "runtime": "podman", **extra.pop("runtime", {})}
    return launch(client, workdir, argv, runtime=runtime, **extra)


def running_container_job(
    client: AgentClient, workdir: Path, agent_dir: Path, argv: list[str], **extra: Any
) -> dict[str, Any]:
    (workdir / "train.py").write_text(TRAIN)
    job = container_job(client, workdir, argv, **extra)
    wait_for(lambda: '"loss"' in output(agent_dir, job["id"]), timeout=60, what="the first loss line")
    return job


def all_command_lines() -> str:
    lines = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                lines.append(
                    (Path("/proc") / entry / "cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode(errors="replace")
                )
            except OSError:
                continue
    return "\n".join(lines)
