"""The node of an `--elastic` job whose output carries rank 0 journals a `resized` record at each
regroup, as a restart-mode resize does (resize.py): from → to nodes, the world size, why, the step and
how long training paused. The job keeps its id through the change, so the record comes from what the
output says happened, not from a new job's spec. Every node watches its own output: torchrun's c10d
rendezvous sorts nodes by (address, pid), so a regroup may put rank 0 on any node:

- a regroup: the trainer's `world_size_changed` event (`previous` → `world_size`), or, for a
  trainer that prints no such event, a step that goes back to or below the last one seen while
  a note from the client is waiting (a restart from the checkpoint);
- why: the client's note (`resize.json`, written by the agent's `resizing` op: `scale +1`, …);
  else a sibling node on this host that failed on its own (its journal's cause); else unknown;
- the pause: from the last step before the regroup to the first one after (this host's clock).

The record goes just before that first step at the new size, so a chart marks it there.
Standard library only (the agent's rule).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

Entry = Tuple[str, Dict[str, Any]]
MAX_WHY = 300


def read_resize_note(path: Path) -> Optional[Dict[str, Any]]:
    """The client's note of a resize it started ({from, to, why}); None when absent or malformed."""
    try:
        with open(str(path), "rb") as f:
            body = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    why = body.get("why")
    return {
        "from": _count(body.get("from")),
        "to": _count(body.get("to")),
        "why": why[:MAX_WHY] if isinstance(why, str) else None,
    }


class ElasticResizes:
    def __init__(
        self, spec: Dict[str, Any], job_dir: Optional[Path] = None, clock: Callable[[], float] = time.time
    ) -> None:
        multinode = spec.get("multinode")
        plan: Dict[str, Any] = multinode if isinstance(multinode, dict) else {}
        # Every node watches: a regroup may put rank 0 (whose output says the world changed) on any of
        # them, and only the node that prints it sees it (issue 29, finding 13).
        self.active = bool(plan.get("elastic"))
        per_node = plan.get("nproc_per_node")
        self.per_node = per_node if isinstance(per_node, int) and per_node > 0 else 1
        self.job_dir = job_dir  # jobs/<id>/: sibling nodes on this host
        self.own = str(spec.get("node", "0"))
        self.clock = clock
        self.note: Optional[Dict[str, Any]] = None  # the client's, until a regroup uses it
        self.pending: Optional[Dict[str, Any]] = None  # a regroup seen, waiting for its first step
        self.last_step: Optional[float] = None
        self.last_step_at: Optional[float] = None
        self.told: Set[str] = set()  # sibling failures already given as a why

    def arm(self, note: Dict[str, Any]) -> None:
        self.note = note

    def mark(self, entries: List[Entry]) -> List[Entry]:
        if not self.active:
            return entries
        out: List[Entry] = []
        for kind, body in entries:
            if kind == "event" and body.get("event") == "world_size_changed":
                raw = body.get("data")
                data: Dict[str, Any] = raw if isinstance(raw, dict) else {}
                before, after = _count(data.get("previous")), _count(data.get("world_size"))
                if before is not None and after is not None and before != after:
                    self._regroup(self._nodes(before), self._nodes(after), after)
            values = body.get("values") if kind == "metric" else None
            step = _number(values.get("step")) if isinstance(values, dict) else None
            if step is not None:
                if (
                    self.pending is None
                    and self.note is not None
                    and self.last_step is not None
                    and step <= self.last_step
                ):
                    self._regroup(self.note.get("from"), self.note.get("to"), None)
                if self.pending is not None:
                    out.append(("event", {"event": "resized", "data": self._record(step)}))
                self.last_step, self.last_step_at = step, self.clock()
            out.append((kind, body))
        return out

    def _nodes(self, world: int) -> Optional[int]:
        return world // self.per_node if world % self.per_node == 0 else None

    def _regroup(self, before: Optional[int], after: Optional[int], world: Optional[int]) -> None:
        note, self.note = self.note, None
        if note is not None and after is not None and note.get("to") not in (None, after):
            note = None  # a note for another regroup (left on a node that was not rank 0 then)
        why = note.get("why") if note else None
        if why is None and before is not None and after is not None and after < before:
            why = self._sibling_failure()
        self.pending = {
            "from": before if before is not None else (note or {}).get("from"),
            "to": after if after is not None else (note or {}).get("to"),
            "world_size": world if world is not None else _times((note or {}).get("to"), self.per_node),
            "why": why,
            "paused_from": self.last_step_at,
        }

    def _record(self, step: float) -> Dict[str, Any]:
        pending, self.pending = self.pending or {}, None
        since = pending.pop("paused_from", None)
        return dict(pending, step=step, pause_s=round(self.clock() - since, 3) if since is not None else None)

    def _sibling_failure(self) -> Optional[str]:
        """`node N on HOST failed: CAUSE` for a node of this job on this host that dropped itself
        (elastic_failure.py) and was not told yet; None when there is none here."""
        if self.job_dir is None:
            return None
        try:
            names = sorted(os.listdir(str(self.job_dir)))
        except OSError:
            return None
        for name in names:
            if name == self.own or name in self.told:
                continue
            cause = _dropped_cause(self.job_dir / name / "events.jsonl")
            if cause is not None:
                self.told.add(name)
                host = _host_of(self.job_dir / name / "spec.json")
                return "node %s%s failed: %s" % (name, " on %s" % host if host else "", cause)
        return None


def _dropped_cause(journal: Path) -> Optional[str]:
    """The cause a node journaled when it dropped itself from an elastic job (a `node_failed` event)."""
    try:
        with open(str(journal), "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 65536))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if '"node_failed"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):  # a sibling's journal is read, never trusted: any shape
            continue
        data = record.get("data")
        cause = data.get("cause") if isinstance(data, dict) else None
        if record.get("event") == "node_failed" and isinstance(cause, str):
            return cause[:MAX_WHY]
    return None


def _host_of(spec_path: Path) -> Optional[str]:
    try:
        with open(str(spec_path), "rb") as f:
            spec = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    plan = spec.get("multinode") if isinstance(spec, dict) else None
    host = plan.get("host") if isinstance(plan, dict) else None
    return host if isinstance(host, str) and host else None


def _count(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _number(value: Any) -> Optional[float]:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    return value if ok else None


def _times(count: Optional[int], per_node: int) -> Optional[int]:
    return count * per_node if count is not None else None
