"""What a lost job's journal says about it: enough for a new supervisor to take over where the old
one stopped (its command, since when it ran, where output parsing stopped, which rules had fired).

Read in one streaming pass: only the records after the last heartbeat are kept, so a week-long
journal costs time once, not memory.
"""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import Any, Deque, Dict, List, Optional, Set, Tuple

from ..jobstate import TERMINAL_STATES
from ..storage.journal import JournalReader
from ..storage.jsonio import dumps

OUTPUT_KINDS = ("metric", "event")  # the kinds of record a line of output can make


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _time(value: Any) -> Optional[float]:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e11
    return float(value) if ok else None


class LostJob:
    """The facts of one (job, node) journal; `ended` when it already has its end."""

    def __init__(self) -> None:
        self.ended = False
        self.started = False  # a `starting` record: a supervisor did run this job
        self.pid: Optional[int] = None  # the command's pid, from the `running` record
        self.running_at: Optional[float] = None  # host clock, epoch seconds
        self.previous_supervisor: Optional[int] = None
        self.lost_at: Optional[float] = None  # the last record's time: the old supervisor's last sign of life
        self.resume_offset = 0  # bytes of output.log whose lines the journal already holds
        self.after_resume: List[Dict[str, Any]] = []  # output-kind records written after that offset was
        self.last_values: Optional[Dict[str, Any]] = None  # the last metric point before the offset
        self.budget_warned = False
        self.resized_said = False  # a resized job's `resized` record is written once, not again
        self.output_dropped_to = 0  # the output cap's hole ends here (0: none yet)
        self.advised: Set[str] = set()  # the kinds of advice already journaled: an adopter says none again

    def fold(self, record: Dict[str, Any]) -> None:
        kind = record.get("kind")
        t = _time(record.get("t"))
        if t is not None:
            self.lost_at = t
        if kind == "state":
            state = record.get("state")
            if state == "starting":
                self.started = True
                self.previous_supervisor = _int(record.get("supervisor_pid")) or self.previous_supervisor
            elif state == "running":
                self.pid = _int(record.get("pid"))
                self.running_at = t
            elif isinstance(state, str) and state in TERMINAL_STATES:
                self.ended = True
        elif kind == "heartbeat":
            offset = record.get("output_offset")
            if isinstance(offset, int) and not isinstance(offset, bool) and offset >= self.resume_offset:
                self._resume_from(offset)
        elif kind in OUTPUT_KINDS:
            self.after_resume.append(_payload(record))
            if kind == "event" and record.get("event") == "output_dropped":
                data = record.get("data")
                end = data.get("to") if isinstance(data, dict) else None
                if isinstance(end, int) and not isinstance(end, bool):
                    self.output_dropped_to = max(self.output_dropped_to, end)
            if kind == "event" and record.get("event") == "resized":
                self.resized_said = True
            if kind == "event" and record.get("event") == "advice":
                data = record.get("data")
                if (
                    isinstance(data, dict)
                    and isinstance(data.get("kind"), str)
                    and data["kind"] != "gpu_health"
                ):
                    self.advised.add(data["kind"])
            if kind == "event" and record.get("event") == "budget_warning":
                self.budget_warned = True
            if kind == "event" and record.get("event") == "adopted":
                data = record.get("data")
                pid = _int(data.get("supervisor_pid")) if isinstance(data, dict) else None
                self.previous_supervisor = pid or self.previous_supervisor

    def _resume_from(self, offset: int) -> None:
        for payload in reversed(self.after_resume):
            if payload.get("kind") == "metric" and isinstance(payload.get("values"), dict):
                self.last_values = payload["values"]
                break
        self.resume_offset = offset
        self.after_resume = []

    def lost_at_text(self) -> str:
        if self.lost_at is None:
            return "an unknown time"
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.lost_at))


def unknown_end(
    lost: LostJob, requested: Optional[str] = None, reason: Optional[str] = None
) -> Dict[str, Any]:
    """The end record of a job whose command was not the writer's child: its exit code is unknowable."""
    state = {"kill": "killed", "stop": "stopped"}.get(requested or "", "exited")
    fields: Dict[str, Any] = {
        "state": state,
        "exit_code": None,
        "signal": None,
        "code_unknown": True,
        "cause": "exit code unknown: its supervisor was lost at %s" % lost.lost_at_text(),
    }
    if requested in ("kill", "stop"):
        fields["reason"] = reason
    return fields


def _payload(record: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("seq", "t")}


def read_lost_job(journal: Path) -> LostJob:
    facts = LostJob()
    reader = JournalReader(journal)
    while True:
        batch = reader.read_new(4 << 20)
        if not batch:
            return facts
        for record in batch:
            facts.fold(record)


class OutputReplay:
    """Drops the entries a re-read of output makes that the journal already holds.

    Parsing is deterministic: re-reading output.log from the resume offset yields first exactly the
    output records written after it (in order, between the old supervisor's own events), then new
    ones. Each entry matching the next expected record is dropped; once none is expected, all pass.
    """

    def __init__(self, expected: List[Dict[str, Any]]) -> None:
        self.expected: Deque[Dict[str, Any]] = deque(expected)

    def fresh(self, entries: List[Tuple[str, Dict[str, Any]]]) -> List[Tuple[str, Dict[str, Any]]]:
        if not self.expected:
            return entries
        out = []
        for kind, fields in entries:
            if self.expected:
                written = dict(json.loads(dumps(fields)), kind=kind)  # as the journal holds it
                while self.expected and self.expected[0] != written:
                    self.expected.popleft()  # the old supervisor's own event (stop_requested…)
                if self.expected:
                    self.expected.popleft()
                    continue
            out.append((kind, fields))
        return out
