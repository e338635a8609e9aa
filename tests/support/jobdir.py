"""A job's node dir made as `launch` makes it (spec, control slot), without starting its supervisor:
for tests that start the supervisor themselves, under a probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.storage.files import ensure_private_dir, write_private_atomic
from remote_agent.storage.layout import JobFiles, job_dir
from remote_agent.supervision.control import make_control_slot
from remote_agent.supervision.jobspec import validate_spec
from tests.support.jobs import journal


def prepared_job(
    agent_dir: Path, workdir: Path, argv: list[str], **extra: Any
) -> tuple[dict[str, Any], Path]:
    """`extra`: more spec fields (heartbeat_interval...)."""
    ensure_private_dir(agent_dir / "jobs")
    raw = {"id": new_job_id(), "name": "probe", "node": "0", "argv": argv, "workdir": str(workdir), **extra}
    spec = validate_spec(raw, agent_dir)
    directory = job_dir(agent_dir, spec["id"], "0")
    ensure_private_dir(directory.parent)
    directory.mkdir(mode=0o700)
    files = JobFiles(directory)
    write_private_atomic(files.spec, json.dumps(spec).encode())
    make_control_slot(files.control)
    return spec, directory


def running(agent_dir: Path, job: str) -> bool:
    if not (agent_dir / "jobs" / job / "0" / "events.jsonl").exists():
        return False
    return any(r.get("state") == "running" for r in journal(agent_dir, job))


def start_probed_supervisor(probe: str, *args: str) -> subprocess.Popen[bytes]:
    """A supervisor started as serve starts it (its own session, from /, no PYTHONPATH of ours) by
    `python -c probe *args`: the probe installs its hook, then runs the agent from the checkout
    root it is given."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen(
        [sys.executable, "-c", probe, *args],
        env=env,
        cwd="/",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
