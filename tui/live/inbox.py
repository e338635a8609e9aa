"""A thread-safe inbox: worker and reader threads put updates, the app thread drains them.

The app is woken only when the inbox goes from empty to non-empty, so a burst of thousands of
journal events costs one wake-up message and one drain, whatever the event rate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_PENDING = 100_000  # the app stalled (a debugger, a suspended terminal): drop polls, not journals
KEPT = frozenset({"events", "polled"})  # never dropped: a journal gap, or a poll chain that would stop


@dataclass(frozen=True)
class Update:
    """One thing learned from a host: kind is hello, gpus, jobs, events or status."""

    kind: str
    host: str
    data: Any = None
    job: str | None = None
    node: str | None = None
    after: int | None = None  # events: every seq after it is accounted for (a cut's seqs are gone)


class Inbox:
    def __init__(self, wake: Callable[[], object] | None = None) -> None:
        self._items: list[Update] = []
        self._lock = threading.Lock()
        self._wake: Callable[[], object] = wake or (lambda: None)
        self.dropped = 0

    def set_wake(self, wake: Callable[[], object]) -> None:
        self._wake = wake

    def put(self, update: Update) -> None:
        with self._lock:
            was_empty = not self._items
            if len(self._items) >= MAX_PENDING and update.kind not in KEPT:
                self.dropped += 1  # a missed GPU sample is harmless; a journal gap is not
                return
            self._items.append(update)
        if was_empty:
            self._wake()

    def drain(self) -> list[Update]:
        with self._lock:
            items, self._items = self._items, []
        return items

    def take(self, budget: int) -> list[Update]:
        """Up to about `budget` records' worth of updates, oldest first (one per non-event update);
        a big events batch is cut, its rest kept at the front. What is left waits for the next
        take: the caller asks again (the wake fires only when the inbox was empty)."""
        with self._lock:
            taken: list[Update] = []
            i = 0
            while i < len(self._items) and budget > 0:
                u = self._items[i]
                n = len(u.data) if u.kind == "events" and isinstance(u.data, list) else 1
                if n > budget:
                    taken.append(Update(u.kind, u.host, u.data[:budget], u.job, u.node))
                    self._items[i] = Update(u.kind, u.host, u.data[budget:], u.job, u.node)
                    break
                taken.append(u)
                budget -= n
                i += 1
            del self._items[:i]
            return taken

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
