"""An ended job written straight into an agent dir the way its supervisor writes it (JournalWriter,
under the job's lock), so a job of many thousand points takes a moment instead of a run."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from remote_agent.storage.journal import JournalWriter


def write_ended_job(
    agent_dir: Path,
    job_id: str,
    name: str,
    points: int,
    spike_at: int | None = None,
    burst: int = 2000,
    end_state: str = "exited",
    end_fields: dict[str, object] | None = None,
) -> Path:
    """`points` metric points (step i, loss 1/i; loss 50 at step `spike_at`), then ended as
    `end_state` with `end_fields` (default: exited with 0)."""
    directory = agent_dir / "jobs" / job_id / "0"
    directory.mkdir(parents=True)
    # Held while writing, as a supervisor holds it: a serve sweeping meanwhile must not find the
    # half-written job `lost` and journal an end of its own (a flaky extra record under load).
    lock_fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)
    try:
        write_files(directory, job_id, name, agent_dir, points, spike_at, burst)
        end = end_fields if end_fields is not None else {"exit_code": 0, "signal": None}
        journal = JournalWriter(directory / "events.jsonl")
        journal.append("state", state=end_state, **end)
        journal.close()
    finally:
        os.close(lock_fd)
    return directory


def write_files(
    directory: Path, job_id: str, name: str, agent_dir: Path, points: int, spike_at: int | None, burst: int
) -> None:
    spec = {
        "id": job_id,
        "name": name,
        "node": "0",
        "argv": ["python3", "train.py"],
        "workdir": str(agent_dir),
        "env": {},
        "setup": [],
        "grace": 60.0,
        "created_at": time.time(),
        "stop_signal": "SIGTERM",
    }
    (directory / "spec.json").write_text(json.dumps(spec))
    (directory / "output.log").write_text("")
    journal = JournalWriter(directory / "events.jsonl")
    journal.append("state", state="starting", supervisor_pid=1)
    journal.append("state", state="running", pid=2)
    for start in range(1, points + 1, burst):
        steps = range(start, min(points, start + burst - 1) + 1)
        journal.append_many(
            [
                ("metric", {"values": {"step": i, "loss": 50.0 if i == spike_at else round(1.0 / i, 6)}})
                for i in steps
            ]
        )
    journal.close()
