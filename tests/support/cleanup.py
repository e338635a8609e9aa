"""Kills everything a test's jobs started: supervisors and every process carrying a job's marker."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from remote_agent.supervision.proctree import JOB_MARKER_VAR, marked_processes


def job_keys(agent_dir: Path) -> list[str]:
    jobs = agent_dir / "jobs"
    if not jobs.is_dir():
        return []
    return [f"{j.name}/{n.name}" for j in jobs.iterdir() if j.is_dir() for n in j.iterdir() if n.is_dir()]


def supervisor_pids(agent_dir: Path) -> list[int]:
    pids = []
    for journal in agent_dir.glob("jobs/*/*/events.jsonl"):
        for line in journal.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("supervisor_pid"):
                pids.append(int(record["supervisor_pid"]))
            data = record.get("data")
            if record.get("event") == "adopted" and isinstance(data, dict) and data.get("supervisor_pid"):
                pids.append(int(data["supervisor_pid"]))  # a supervisor that took a lost job over
    return pids


def kill_keeper(agent_dir: Path) -> None:
    """The agent dir's keeper (remote_agent/supervision/keeper.py) first: it would adopt what follows."""
    for name in os.listdir("/proc"):
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0") if name.isdigit() else []
        except OSError:
            continue
        if b"keeper" in argv and str(agent_dir).encode() in argv:
            try:
                os.kill(int(name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass


def kill_all_jobs(agent_dir: Path) -> None:
    kill_keeper(agent_dir)
    for pid in supervisor_pids(agent_dir):
        try:
            if f"{agent_dir}".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass
    for key in job_keys(agent_dir):
        for pid in marked_processes(key):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


__all__ = ["JOB_MARKER_VAR", "kill_all_jobs"]
