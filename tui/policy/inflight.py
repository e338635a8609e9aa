"""Launches as in-flight work: a cloud launch (run, wait until it runs, wait for SSH: up to 600 s)
goes to a worker thread, and the controller's pass goes on — the queue and the rules are not held up
by an instance that is still booting. Each later pass asks again with the same token: still under
way (`LaunchInFlight`), or its result (the launch's own error, raised as it was).

The token is the caller's, derived from what it journaled (a recovery's chain and number, a queued
job's id): a controller killed mid-launch asks again with the same token at its next start, and the
provider's idempotent launch finds that instance instead of making a second one.

Worker threads are daemons: stopping the controller never waits on a boot; the next start resumes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class LaunchInFlight(Exception):  # noqa: N818 — a state, not an error: the work goes on
    """The launch for `token` is under way; `started` is True on the pass that started it."""

    def __init__(self, token: str, started: bool) -> None:
        super().__init__(f"launch {token} under way")
        self.token, self.started = token, started


@dataclass
class _Work(Generic[T]):
    thread: threading.Thread | None = None  # None: ran inline, done
    result: T | None = None
    error: BaseException | None = None


@dataclass
class InFlight:
    """token → the launch running for it (one at a time per token)."""

    work: dict[str, _Work[Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # `policy run --once`: one pass and no next one to ask again, so the pass waits for its launches
    inline: bool = False

    def start(self, token: str, fn: Callable[..., Any], *args: Any) -> bool:
        """Start `fn(*args)` for `token` unless it was started and not collected yet; True: started now."""
        with self.lock:
            if token in self.work:
                return False
            work: _Work[Any] = _Work()
            self.work[token] = work
            if not self.inline:
                work.thread = threading.Thread(
                    target=self._run, args=(work, fn, args), name=f"launch {token}", daemon=True
                )
                work.thread.start()
                return True
        self._run(work, fn, args)
        return True

    def running(self, token: str) -> bool:
        with self.lock:
            work = self.work.get(token)
        return work is not None and work.thread is not None and work.thread.is_alive()

    def call(self, token: str, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)`'s result once done; LaunchInFlight while it runs (started now or earlier).
        Collected once: the next call with this token launches (finds) anew."""
        started = self.start(token, fn, *args)
        if self.running(token):
            raise LaunchInFlight(token, started)
        with self.lock:
            work = self.work.pop(token)
        if work.error is not None:
            raise work.error
        return work.result  # type: ignore[return-value]

    def busy(self) -> list[str]:
        with self.lock:
            return [t for t, w in self.work.items() if w.thread is not None and w.thread.is_alive()]

    @staticmethod
    def _run(work: _Work[Any], fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            work.result = fn(*args)
        except BaseException as exc:  # carried to the pass that asks next, raised there as it was
            work.error = exc

    def wait(self, timeout: float | None = None) -> None:
        """Join every running launch (tests, and nothing else: the controller never waits)."""
        with self.lock:
            threads = [w.thread for w in self.work.values() if w.thread is not None]
        for t in threads:
            t.join(timeout)
