"""A watch job's `watch` field (a run gpudeck did not start, followed through its log file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WatchInfo:
    """What a job object's `watch` says: the file, and the pid when stop/kill may act."""

    path: str
    pid: int | None

    @property
    def read_only(self) -> bool:
        return self.pid is None

    @classmethod
    def of(cls, value: Any) -> WatchInfo | None:
        if not isinstance(value, dict) or not isinstance(value.get("path"), str):
            return None
        pid = value.get("pid")
        return cls(value["path"][:4096], pid if isinstance(pid, int) and not isinstance(pid, bool) else None)
