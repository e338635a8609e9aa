"""Issue 29, finding 11: an interrupted big launch left nodes whose spec was written but whose
supervisor never started: `starting` forever, `stop`/`kill` answered "stopped" without a record,
and `rm` refused them forever. Past the launch's own wait, their failed start is journaled."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.support.jobs import spec
from tui.remote.client import AgentClient


def cut_launch(agent_dir: Path, workdir: Path, node: str) -> str:
    """A node as a launch cut between its spec and its supervisor leaves it, a minute ago."""
    s = dict(spec(workdir, ["sleep", "300"]), node=node)
    d = agent_dir / "jobs" / s["id"] / node
    d.mkdir(parents=True, mode=0o700)
    (d / "spec.json").write_text(json.dumps(s))
    old = time.time() - 120
    os.utime(d / "spec.json", (old, old))
    return str(s["id"])


def test_a_node_whose_launch_was_cut_can_be_stopped_and_removed(
    agent_dir: Path, client: AgentClient, workdir: Path
) -> None:
    job = cut_launch(agent_dir, workdir, "0")
    [listed] = [j for j in client.request("jobs")["jobs"] if j["id"] == job]
    assert listed["state"] == "starting"
    answer = client.request("kill", job=job, node="0", timeout=60)
    assert answer["state"] == "failed" and "launch was interrupted" in answer["cause"], answer
    assert client.request("rm", job=job, node="0") == {"removed": job}


def test_rm_alone_takes_a_node_whose_launch_was_cut(
    agent_dir: Path, client: AgentClient, workdir: Path
) -> None:
    job = cut_launch(agent_dir, workdir, "3")
    assert client.request("rm", job=job, node="3") == {"removed": job}
    assert not (agent_dir / "jobs" / job).exists()
