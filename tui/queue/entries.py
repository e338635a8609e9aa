"""The queue of jobs waiting for GPUs (`gpudeck run --pool … --gpus N --queue`), kept on this machine.

One file per job in `<data dir>/queue/` (dir 0700, files 0600: a queued job's env values wait here,
as they wait in a spec.json on a host once launched), so the queue survives any process. A start
claims its file by renaming it (`ID.json` → `ID.starting`): two controllers never launch the same
job, and a start cut by a SIGKILL is found at the next pass (the job either runs or goes back).
Order: higher `priority` first, then the earlier `submitted_at` (FIFO within a priority).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from remote_agent.names import is_job_id
from remote_agent.spec import GpuRequest, Stall

from .. import paths
from ..actions.options import LaunchOptions
from ..sync.options import SyncOptions

QUEUED, STARTING = ".json", ".starting"
MAX_PRIORITY = 1000


class QueueError(Exception):
    """A queue file that cannot be read or written; the message names it."""


@dataclass(frozen=True)
class QueueEntry:
    id: str
    opts: LaunchOptions
    priority: int = 0
    submitted_at: float = 0.0

    @property
    def name(self) -> str:
        return self.opts.name or self.id

    @property
    def gpus(self) -> int:
        return self.opts.gpus.count if self.opts.gpus is not None else 1

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "priority": self.priority,
            "submitted_at": self.submitted_at,
            "opts": options_to_wire(self.opts),
        }

    @classmethod
    def from_wire(cls, obj: Any) -> QueueEntry:
        if not isinstance(obj, dict) or not is_job_id(obj.get("id")) or not isinstance(obj.get("opts"), dict):
            raise ValueError("not a queue entry")
        priority, at = obj.get("priority", 0), obj.get("submitted_at", 0.0)
        if not isinstance(priority, int) or not isinstance(at, (int, float)):
            raise ValueError("priority/submitted_at: not numbers")
        return cls(obj["id"], options_from_wire(obj["opts"]), priority, float(at))


def options_to_wire(opts: LaunchOptions) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(opts):
        value = getattr(opts, f.name)
        if isinstance(value, (SyncOptions, GpuRequest, Stall)):
            value = {g.name: getattr(value, g.name) for g in fields(value)}
        out[f.name] = value
    return out


def options_from_wire(obj: dict[str, Any]) -> LaunchOptions:
    known = {f.name for f in fields(LaunchOptions)}
    kw: dict[str, Any] = {}
    for key, value in obj.items():
        if key not in known:
            raise ValueError(f"opts.{key}: unknown")
        if key == "env":
            value = tuple((str(k), str(v)) for k, v in value)
        elif key == "sync" and value is not None:
            value = SyncOptions(
                directory=str(value["directory"]),
                include_git=bool(value["include_git"]),
                max_file_size=int(value["max_file_size"]),
                include=tuple(value["include"]),
            )
        elif key == "gpus" and value is not None:
            value = GpuRequest.from_wire(value)
        elif key == "stall" and value is not None:
            value = Stall.from_wire(value)
        elif isinstance(value, list):
            value = tuple(value)
        kw[key] = value
    return LaunchOptions(**kw)


class Queue:
    def __init__(self, directory: Path | None = None) -> None:
        self.dir = directory or paths.queue_dir()
        self.problems: list[str] = []  # files the last `entries` skipped, each with why

    def add(self, job_id: str, opts: LaunchOptions, priority: int = 0) -> QueueEntry:
        entry = QueueEntry(job_id, opts, priority, time.time())
        paths.ensure_private(self.dir)
        path = self.dir / (job_id + QUEUED)
        tmp = path.with_suffix(".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry.to_wire(), f)
            os.replace(tmp, path)
        except OSError as exc:
            raise QueueError(f"{path}: cannot write the queued job: {exc.strerror or exc}") from None
        return entry

    def entries(self, suffix: str = QUEUED) -> list[QueueEntry]:
        """The waiting jobs in start order; an unreadable file is skipped (`problems` says which)."""
        self.problems = []
        out = []
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return []
        for name in names:
            if not name.endswith(suffix):
                continue
            try:
                out.append(QueueEntry.from_wire(json.loads((self.dir / name).read_text(encoding="utf-8"))))
            except (OSError, ValueError, TypeError) as exc:
                self.problems.append(f"{self.dir / name}: skipped: {exc}")
        return sorted(out, key=lambda e: (-e.priority, e.submitted_at, e.id))

    def claim(self, entry: QueueEntry) -> bool:
        """Take the entry for a start; False when another took (or cancelled) it first."""
        try:
            os.rename(self.dir / (entry.id + QUEUED), self.dir / (entry.id + STARTING))
        except FileNotFoundError:
            return False
        return True

    def release(self, entry: QueueEntry) -> None:
        """A start that could not happen: the entry waits again, in its place."""
        try:
            os.rename(self.dir / (entry.id + STARTING), self.dir / (entry.id + QUEUED))
        except FileNotFoundError:
            pass

    def done(self, entry: QueueEntry) -> None:
        for suffix in (STARTING, QUEUED):
            try:
                os.unlink(self.dir / (entry.id + suffix))
            except FileNotFoundError:
                pass

    def cancel(self, ref: str) -> QueueEntry | None:
        """Remove a waiting job by id, id prefix or name; None when no waiting job matches."""
        for entry in self.entries():
            matches = entry.id == ref or (entry.id.startswith(ref) and len(ref) >= 8) or entry.name == ref
            if matches and self.claim(entry):
                self.done(entry)
                return entry
        return None
