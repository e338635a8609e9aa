"""The periodic polls of every host (`gpus` ~1 Hz, `jobs` every 2 s), run by one small thread pool.

A Textual worker per poll costs an asyncio task, a thread, three state-change messages and a timer
to re-arm it: at 64 hosts that was ~100 of each a second on the app's loop. Here the app thread
keeps one schedule (when each (host, kind) is next due) and one ticking timer hands what is due to
the pool; the outcome of each poll comes back through the Inbox (an Update of kind "polled"), so a
second's polls of the whole fleet cost a few drains, not a few hundred messages.
No Textual here: the caller owns the timer and applies outcomes on its thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from .inbox import Inbox, Update

MAX_THREADS = 16  # a frozen host holds one for up to POLL_TIMEOUT; the others keep polling


class PollSchedule:
    """When each (host, kind) poll is next due; one in flight per (host, kind) at most (a poll
    leaves the schedule while it runs and comes back when its outcome is applied)."""

    def __init__(self) -> None:
        self._due: dict[tuple[str, str], tuple[float, int]] = {}  # → (time, the host's generation)

    def arm(self, host: str, kind: str, at: float, gen: int) -> None:
        self._due[(host, kind)] = (at, gen)

    def drop(self, host: str) -> None:
        for key in [k for k in self._due if k[0] == host]:
            del self._due[key]

    def take_due(self, now: float) -> list[tuple[str, str, int]]:
        """The polls due by `now` (host, kind, generation), taken off the schedule."""
        due = [(h, k, gen) for (h, k), (at, gen) in self._due.items() if at <= now]
        for h, k, _ in due:
            del self._due[(h, k)]
        return due

    def due_at(self, host: str, kind: str) -> float | None:
        entry = self._due.get((host, kind))
        return entry[0] if entry else None


class PollPool:
    """Runs blocking polls on a few daemon threads (a poll stuck on a frozen host must not hold the
    app's exit, as a non-daemon executor thread would); each outcome goes to the inbox as
    Update("polled", host, (kind, generation, error or None))."""

    def __init__(self, inbox: Inbox, threads: int = MAX_THREADS) -> None:
        self.inbox = inbox
        self._jobs: queue.SimpleQueue[tuple[str, str, int, Callable[[], None]] | None] = queue.SimpleQueue()
        self._max = threads
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a poll: a new one starts only when none is
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, host: str, kind: str, gen: int, poll: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                return
            if self._idle <= 0 and len(self._threads) < self._max:
                t = threading.Thread(target=self._run, name=f"gpudeck-poll-{len(self._threads)}", daemon=True)
                self._threads.append(t)
                self._idle += 1
                t.start()
            self._idle -= 1
        self._jobs.put((host, kind, gen, poll))

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            host, kind, gen, poll = item
            error: BaseException | None = None
            try:
                poll()
            except Exception as exc:  # a poll's failure is its outcome, handled on the app thread
                error = exc
            if not self._closed:
                self.inbox.put(Update("polled", host, (kind, gen, error)))
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        """No more polls; those running finish on their own (a frozen one within its timeout)."""
        with self._lock:
            self._closed = True
            for _ in self._threads:
                self._jobs.put(None)
