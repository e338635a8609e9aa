"""The policy journal: every decision the controller journaled, with its inputs, action and outcome.

One JSON object per line in `policy-journal.jsonl` under the gpudeck data dir, mode 0600. The
reader is total (a malformed line is skipped and counted); the writer is bounded (past MAX_BYTES the
file moves to `.1`, keeping one old generation). It is also the controller's memory: when a rule last
applied to a job name (cooldowns, schedule periods) survives a restart of `policy run`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import paths
from .engine import Decision
from .inputs import Applied

MAX_BYTES = 8 * 1024 * 1024
# `intent` is written before a resize acts (its `decision` token is the new job's id); `rolled_back`
# and `abandoned` close an intent a killed controller left open (policy/resume.py)
OUTCOMES = (
    "applied",
    "proposed",
    "refused",
    "failed",
    "launching",
    "launched",
    "intent",
    "rolled_back",
    "abandoned",
)


def journal_path() -> Path:
    return paths.data_dir() / "policy-journal.jsonl"


class PolicyJournal:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or journal_path()
        self.malformed = 0
        # the files' identities when last read, and what they held: the TUI judges every few seconds
        # and the controller every pass, and the journal (up to 2 × MAX_BYTES) rarely changes between
        self._read: tuple[tuple[tuple[int, int, int] | None, ...], list[dict[str, Any]], int] | None = None

    def write(self, t: float, decision: Decision, outcome: str, **extra: Any) -> dict[str, Any]:
        record = {
            "t": round(t, 3),
            **decision.to_json(),
            "period": decision.period,
            "outcome": outcome,
            **extra,
        }
        return self._append(record)

    def note(self, record: dict[str, Any]) -> dict[str, Any]:
        """A record of the queue's (`kind: queue`: a queued job started, failed, requeued), in the
        controller's one journal beside the rules' decisions."""
        return self._append(record)

    def follow_up(self, intent: dict[str, Any], t: float, outcome: str, **extra: Any) -> dict[str, Any]:
        """The outcome of a journaled intent: its decision's fields, a new time and outcome."""
        kept = {k: v for k, v in intent.items() if k not in ("t", "outcome", "onto")}
        return self._append({**kept, "t": round(t, 3), "outcome": outcome, **extra})

    def _append(self, record: dict[str, Any]) -> dict[str, Any]:
        line = json.dumps(record, default=str, allow_nan=False) + "\n"
        paths.ensure_private(self.path.parent)
        if self.path.exists() and self.path.stat().st_size + len(line) > MAX_BYTES:
            os.replace(self.path, self.path.with_suffix(".jsonl.1"))
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
        # what was written, not a view of dicts the caller may change later
        written: dict[str, Any] = json.loads(line)
        return written

    def records(self) -> list[dict[str, Any]]:
        files = (self.path.with_suffix(".jsonl.1"), self.path)
        seen = tuple(_identity(path) for path in files)
        if self._read is not None and self._read[0] == seen:
            self.malformed = self._read[2]
            return list(self._read[1])
        out = []
        self.malformed = 0
        for path in files:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                try:
                    obj = json.loads(line)
                except ValueError:
                    self.malformed += 1
                    continue
                if not isinstance(obj, dict) or not isinstance(obj.get("t"), (int, float)):
                    self.malformed += 1
                    continue
                out.append(obj)
        self._read = (seen, out, self.malformed)
        return list(out)

    def launch_token(self, pool: str, job_id: str, rank: int) -> tuple[str | None, int]:
        """(the token of a launch for this job's node `rank` from this pool that was journaled as
        `launching` and never `launched` — a retry must reuse it —, how many such launches completed)."""
        pending: str | None = None
        records = self.records()
        done = {r.get("token") for r in records if r.get("outcome") == "launched"}
        completed = 0
        for r in records:
            job = j if isinstance(j := r.get("job"), dict) else {}
            if (
                r.get("outcome") != "launching"
                or r.get("pool") != pool
                or job.get("id") != job_id
                or r.get("rank") != rank
            ):
                continue
            if not isinstance(r.get("token"), str):
                self.malformed += 1
            elif r["token"] in done:
                completed += 1
            else:
                pending = r["token"]
        return pending, completed

    def memory(self) -> dict[tuple[str, str], Applied]:
        """(rule, job name) → the last decision applied (or, for vertical, proposed)."""
        memory: dict[tuple[str, str], Applied] = {}
        for r in self.records():
            job = j if isinstance(j := r.get("job"), dict) else {}
            if not isinstance(r.get("rule"), str) or not isinstance(job.get("name"), str):
                continue
            if r.get("outcome") == "applied" or (
                r.get("kind") == "vertical" and r.get("outcome") == "proposed"
            ):
                period = r.get("period") if isinstance(r.get("period"), str) else None
                memory[(r["rule"], job["name"])] = Applied(float(r["t"]), r.get("to"), period)
        return memory


def _identity(path: Path) -> tuple[int, int, int] | None:
    """What tells a file's contents changed (a rotation replaces the inode), or None when absent."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns
