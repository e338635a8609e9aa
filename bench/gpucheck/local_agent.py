"""gpudeck's agent on this machine, as the client runs it for the `local` host: `serve` over a pipe
(tui/remote LocalTransport + AgentClient), a private GPUDECK_HOME, jobs launched and read back."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.storage.records import expand_all
from tui.remote.client import AgentClient, AgentError
from tui.remote.transport import LocalTransport

TERMINAL = {"exited", "failed", "stopped", "killed", "lost"}


class LocalAgent:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.agent_dir = home / "local-agent"
        self.client = AgentClient(LocalTransport(self.agent_dir))
        self.launched: list[str] = []
        self._old_home = os.environ.get("GPUDECK_HOME")

    def __enter__(self) -> LocalAgent:
        self.home.mkdir(parents=True, exist_ok=True)
        os.environ["GPUDECK_HOME"] = str(self.home)  # the agent and its jobs see the private home
        self.client.connect(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            for job_id in self.launched:
                if self.state(job_id) not in TERMINAL:
                    self.kill(job_id)
        except Exception:
            pass  # the agent is gone: its jobs are the runner's children, killed with them
        finally:
            self.client.close()
            if self._old_home is None:
                os.environ.pop("GPUDECK_HOME", None)
            else:
                os.environ["GPUDECK_HOME"] = self._old_home

    def launch(self, name: str, argv: list[str], workdir: str, **spec: Any) -> str:
        job_id = new_job_id()
        full = {"id": job_id, "name": name, "node": "0", "argv": argv, "workdir": workdir, **spec}
        self.client.request("launch", timeout=30, spec=full)
        self.launched.append(job_id)
        return job_id

    def state(self, job_id: str) -> str | None:
        jobs = self.client.request("jobs", timeout=15)["jobs"]
        return next((j["state"] for j in jobs if j["id"] == job_id), None)

    def kill(self, job_id: str) -> None:
        try:
            self.client.request("kill", timeout=15, job=job_id, node="0")
        except AgentError:
            pass  # it ended meanwhile

    def wait_ended(self, job_id: str, timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while True:
            state = self.state(job_id)
            if state in TERMINAL or time.monotonic() > deadline:
                return state
            time.sleep(0.3)

    def journal(self, job_id: str) -> list[dict[str, Any]]:
        """The job's records; a torn last line (being written) and anything not JSON are skipped."""
        path = self.agent_dir / "jobs" / job_id / "0" / "events.jsonl"
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return []
        out = []
        for line in text.split("\n")[:-1]:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                out.append(record)
        return expand_all(out)

    def output(self, job_id: str, tail: int = 2000) -> str:
        path = self.agent_dir / "jobs" / job_id / "0" / "output.log"
        try:
            return path.read_bytes()[-tail:].decode("utf-8", "replace")
        except OSError:
            return ""
