"""A job's current picture, folded from its spec and journal; `lost` derived from the free lock."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any, Dict, Optional

from .jobspec import load_spec
from .journal import JournalReader
from .layout import JobFiles

TERMINAL_STATES = frozenset(["exited", "failed", "stopped", "killed"])


def supervisor_alive(lock_path: Path) -> bool:
    """The supervisor holds an exclusive flock for its whole life; if we can share it, it is gone."""
    try:
        fd = os.open(str(lock_path), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


class JobView:
    """Reads only what the journal gained since the last refresh, so `jobs` stays cheap."""

    def __init__(self, job_id: str, node: str, directory: Path) -> None:
        self.files = JobFiles(directory)
        self.reader = JournalReader(self.files.journal)
        self.spec: Optional[Dict[str, Any]] = None
        self.fields: Dict[str, Any] = {
            "id": job_id,
            "node": node,
            "state": "starting",
            "exit_code": None,
            "signal": None,
            "started_at": None,
            "ended_at": None,
            "pid": None,
            "supervisor_pid": None,
            "cause": None,
            "tail": None,
            "reason": None,
            "last": {},
            "last_seq": 0,
        }

    def refresh(self) -> Dict[str, Any]:
        if self.spec is None:
            try:
                self.spec = load_spec(self.files.spec)
            except (OSError, ValueError):
                self.spec = None
        while True:
            records = self.reader.read_new()
            if not records:
                break
            for record in records:
                self._fold(record)
        return self.as_object()

    def _fold(self, record: Dict[str, Any]) -> None:
        f = self.fields
        f["last_seq"] = record["seq"]
        kind = record.get("kind")
        if kind == "state":
            state = record.get("state")
            f["state"] = state
            if state == "starting":
                f["supervisor_pid"] = record.get("supervisor_pid")
                f["started_at"] = record.get("t")
            elif state == "running":
                f["pid"] = record.get("pid")
            elif state in TERMINAL_STATES:
                f["ended_at"] = record.get("t")
                for key in ("exit_code", "signal", "cause", "tail", "reason"):
                    f[key] = record.get(key)
        elif kind == "metric" and isinstance(record.get("values"), dict):
            f["last"] = dict(f["last"], **record["values"])

    @property
    def terminal(self) -> bool:
        return self.fields["state"] in TERMINAL_STATES

    def current_state(self) -> str:
        state = self.fields["state"]
        if state in TERMINAL_STATES:
            return state
        if self.fields["supervisor_pid"] is None and not self.files.lock.exists():
            return state  # the supervisor has not started yet
        return state if supervisor_alive(self.files.lock) else "lost"

    def as_object(self) -> Dict[str, Any]:
        obj = dict(self.fields)
        obj["state"] = self.current_state()
        spec = self.spec or {}
        obj["name"] = spec.get("name")
        obj["argv"] = spec.get("argv")
        obj["workdir"] = spec.get("workdir")
        obj["restart_of"] = spec.get("restart_of")
        obj["created_at"] = spec.get("created_at")
        obj["grace"] = spec.get("grace")
        obj["total_steps"] = obj["last"].get("total_steps")
        return obj
