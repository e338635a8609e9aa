"""The rule that keeps a logger-fed series single: once a job's logger dir is found, a printed
value WITHOUT a step of a name the logger gives points for is not journaled (the logger's point,
with its step, is that value). Printed values with a step, and values of names the logger does not
give, are always kept. Until the logger's first points say which names it gives (Lightning flushes
its files every few steps or seconds), stepless printed values are held, not dropped, then
journaled without the logger's names (or all of them at the job's end). While no dir is found,
a chunk of output with a stepless value costs one look (a stat of lightning_logs/: Lightning makes
the dir before its bar's first frame). Called under the supervisor's output lock."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .points import INDEXES

Entry = Tuple[str, Dict[str, Any]]
MAX_HELD = 20000  # entries held at most: beyond it the oldest go to the journal as printed


class LoggerGate:
    def __init__(self) -> None:
        self.active = False  # a logger dir was found for the job
        # the follower's look (follow.py): a printed stepless value asks for the dir at once, so
        # the first frames after Lightning made it are not journaled before the thread's next poll
        self.look: Optional[Callable[[], bool]] = None
        self.names: Set[str] = set()  # the series the logger has given points for
        self.held: List[Entry] = []
        self.dropped = 0  # printed values left to the logger

    def found(self) -> None:
        self.active = True

    def printed(self, entries: List[Entry]) -> List[Entry]:
        """The printed output's entries to journal now."""
        if not self.active and self.look is not None and any(map(stepless, entries)):
            self.active = self.look()
        if not self.active:
            return entries
        out: List[Entry] = []
        for entry in entries:
            if not stepless(entry):
                out.append(entry)
            elif not self.names:
                self.held.append(entry)
            else:
                kept = self._without_logged(entry)
                if kept is not None:
                    out.append(kept)
        if len(self.held) > MAX_HELD:
            out = self.held[: len(self.held) - MAX_HELD] + out
            del self.held[: len(self.held) - MAX_HELD]
        return out

    def logged(self, points: List[Dict[str, Any]]) -> List[Entry]:
        """The held entries the logger's points release (without the names these points give)."""
        self.names.update(k for p in points for k in p if k not in INDEXES)
        return self.release() if self.names else []

    def final(self, points: List[Dict[str, Any]]) -> List[Entry]:
        """At the job's end: every held entry (without the names the logger gave, if any)."""
        return self.release()

    def release(self) -> List[Entry]:
        held, self.held = self.held, []
        return [kept for kept in map(self._without_logged, held) if kept is not None]

    def _without_logged(self, entry: Entry) -> Any:
        values = entry[1]["values"]
        kept = {k: v for k, v in values.items() if k not in self.names}
        if len(kept) == len(values):
            return entry
        self.dropped += 1
        if not any(k not in INDEXES for k in kept):
            return None  # nothing left but an index (an epoch)
        return (entry[0], dict(entry[1], values=kept))


def stepless(entry: Entry) -> bool:
    values = entry[1].get("values") if entry[0] == "metric" else None
    return isinstance(values, dict) and "step" not in values
