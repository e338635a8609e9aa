"""The `resized` record of a job that a resize started (spec `resized_from`): journaled once, just
before the first metric point that has a step, so it carries how long training paused, from the
old job's last step to this first one (both on this host's clock)."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

Entry = Tuple[str, Dict[str, Any]]


class ResizeNote:
    def __init__(self, spec: Dict[str, Any]) -> None:
        came = spec.get("resized_from")
        plan = spec.get("multinode")
        self._from: Optional[Dict[str, Any]] = came if isinstance(came, dict) else None
        self._to = plan.get("nodes") if isinstance(plan, dict) else None
        per_node = plan.get("nproc_per_node") if isinstance(plan, dict) else None
        # processes in all: what torch calls the world size (the metric parser drops `world_size`)
        self._world = self._to * per_node if isinstance(self._to, int) and isinstance(per_node, int) else None

    def mark(self, entries: List[Entry]) -> List[Entry]:
        """`entries` with the `resized` event before the first stepped metric (once per job node)."""
        if self._from is None:
            return entries
        for i, (kind, body) in enumerate(entries):
            values = body.get("values") if kind == "metric" else None
            if isinstance(values, dict) and _number(values.get("step")) is not None:
                came, self._from = self._from, None
                last = _number(came.get("last_step_at"))
                data = {
                    "from": _number(came.get("nodes")),
                    "to": _number(self._to),
                    "world_size": self._world,
                    "job": came.get("job"),
                    "why": came.get("why") if isinstance(came.get("why"), str) else None,
                    "step": _number(values.get("step")),
                    "pause_s": round(time.time() - last, 3) if last is not None else None,
                }
                return entries[:i] + [("event", {"event": "resized", "data": data})] + entries[i:]
        return entries


def _number(value: Any) -> Optional[float]:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    return value if ok else None
