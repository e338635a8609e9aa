"""An ended job written straight into an agent dir the way its supervisor writes it (JournalWriter),
so a job of many thousand points takes a moment instead of a run."""

from __future__ import annotations

import json
import time
from pathlib import Path

from remote_agent.storage.journal import JournalWriter


def write_ended_job(
    agent_dir: Path, job_id: str, name: str, points: int, spike_at: int | None = None, burst: int = 2000
) -> Path:
    """`points` metric points (step i, loss 1/i; loss 50 at step `spike_at`), exited with 0."""
    directory = agent_dir / "jobs" / job_id / "0"
    directory.mkdir(parents=True)
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
    (directory / "lock").touch()
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
    journal.append("state", state="exited", exit_code=0, signal=None)
    journal.close()
    return directory
