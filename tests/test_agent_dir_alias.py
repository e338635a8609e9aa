"""Issue 29, finding 14: the agent knew a job's supervisor by its dir's spelling, so a stop through a
second path of the same agent dir (a symlink, a second mount of the same home) found no supervisor,
waited 32 s and failed."""

from __future__ import annotations

from pathlib import Path

from tests.support.jobs import launch, wait_state
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport


def test_a_stop_through_another_path_of_the_agent_dir_reaches_the_supervisor(
    agent_dir: Path, client: AgentClient, workdir: Path, tmp_path: Path
) -> None:
    job = launch(client, workdir, ["sleep", "300"], grace=5)["id"]
    wait_state(client, job, {"running"})
    alias = tmp_path / "same-home"
    alias.symlink_to(agent_dir)
    other = AgentClient(LocalTransport(alias))
    other.connect()
    try:
        answer = other.request("stop", timeout=60, job=job, node="0")
    finally:
        other.close()
    assert answer["state"] == "stopped" and answer.get("cause") is None, answer  # journaled by its supervisor
