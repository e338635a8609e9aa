"""What a journal's last state record says, a reader says, whoever wrote it and whether a
supervisor still holds the lock: every terminal state is final (never `lost` once the lock is free)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remote_agent.jobstate import JobView
from tests.support.long_job import write_ended_job

JOB = "20261205-000000-e0d0e0"


@pytest.mark.parametrize(
    ("state", "end"),
    [
        ("exited", {"exit_code": 0, "signal": None}),
        ("failed", {"exit_code": 3, "signal": None, "cause": "exited with code 3"}),
        ("stopped", {"exit_code": None, "signal": None, "reason": "user"}),
        ("killed", {"exit_code": None, "signal": "SIGKILL", "reason": "user"}),
    ],
)
def test_an_ended_job_with_a_free_lock_reads_as_it_ended(
    agent_dir: Path, state: str, end: dict[str, object]
) -> None:
    directory = write_ended_job(agent_dir, JOB, "short", 3, end_state=state, end_fields=end)
    obj = JobView(JOB, "0", directory).refresh()  # nobody holds the lock: the supervisor is gone
    assert obj["state"] == state and obj["ended_at"] is not None
    assert obj["signal"] == end["signal"] and obj["exit_code"] == end["exit_code"]
