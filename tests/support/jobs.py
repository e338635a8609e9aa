"""Launching real jobs through a real agent client, and reading what they journaled."""

from __future__ import annotations

import json
import os
import queue
import time
from pathlib import Path
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.storage.records import expand_all
from tui.remote.client import AgentClient

TERMINAL = {"exited", "failed", "stopped", "killed"}


def spec(workdir: Path, argv: list[str], **extra: Any) -> dict[str, Any]:
    job_id = new_job_id()
    return {
        "id": job_id,
        "name": extra.pop("name", f"t-{job_id[-6:]}"),
        "node": "0",
        "argv": argv,
        "workdir": str(workdir),
        **extra,
    }


def launch(client: AgentClient, workdir: Path, argv: list[str], **extra: Any) -> dict[str, Any]:
    return client.request("launch", timeout=30, spec=spec(workdir, argv, **extra))


def job(client: AgentClient, job_id: str) -> dict[str, Any]:
    return next(j for j in client.request("jobs")["jobs"] if j["id"] == job_id)


def wait_state(client: AgentClient, job_id: str, states: set[str], timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        obj = job(client, job_id)
        if obj["state"] in states:
            return obj
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} stayed {obj['state']}, wanted {states}")
        time.sleep(0.05)


def collect(client: AgentClient, until: Any, timeout: float = 30) -> list[dict[str, Any]]:
    """Pushed records, in order, until `until(records)` is true."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not until(got):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out; got {len(got)} records: {got[-3:]}")
        try:
            _, _, records = client.events.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        got.extend(records)
    return got


def ended(records: list[dict[str, Any]]) -> bool:
    return any(r["kind"] == "state" and r["state"] in TERMINAL for r in records)


def journal(agent_dir: Path, job_id: str, node: str = "0") -> list[dict[str, Any]]:
    """The journal's records as readers see them (a `points` line is its metric records)."""
    lines = (agent_dir / "jobs" / job_id / node / "events.jsonl").read_text().splitlines()
    return expand_all(json.loads(line) for line in lines)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def pids_with(marker: str) -> list[int]:
    """Live processes whose command line carries the marker (pgrep -f, without its own match)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and alive(int(name)):
            found.append(int(name))
    return found
