"""What the supervisor's loop sleeps on (issue 33: a supervisor of an idle job costs nothing). It
waits until the next thing is due (a heartbeat, a GPU sample, the control poll) and is woken early
by what it must act on at once: the command's end (SIGCHLD), a stop or kill (their signals) and the
reader's or notice watch's flag. Signals reach it through `signal.set_wakeup_fd`, written by
CPython's C handler, so no Python code runs in a handler to wake it. Before, it ticked 20 times a
second whatever the job did. Standard library only (the agent's rule)."""

from __future__ import annotations

import os
import select
import signal
import threading
from typing import Any, Callable, List, Optional, Sequence


def _noop(signum: int, frame: Any) -> None:
    """SIGCHLD's handler: none is needed, but only a handled signal writes to the wakeup fd."""


class LoopWake:
    def __init__(self) -> None:
        self._r, self._w = os.pipe()
        for fd in (self._r, self._w):
            os.set_blocking(fd, False)
            os.set_inheritable(fd, False)

    def arm_signals(self) -> None:
        """From the main thread, once its handlers are installed: every handled signal wakes the wait."""
        signal.signal(signal.SIGCHLD, _noop)
        signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)

    def wake(self) -> None:
        """From any thread, without a lock (a signal handler may call it while the loop wakes)."""
        try:
            os.write(self._w, b"x")
        except OSError:  # the pipe is full: a wake-up is pending already
            pass

    def wait(self, timeout: Optional[float], extra: Sequence[int] = ()) -> List[int]:
        """Until woken, one of `extra` is readable (a pidfd: that process ended) or timeout seconds
        passed (None: no timeout); what woke it is drained (the loop looks at everything). The
        readable `extra` descriptors are returned."""
        try:
            ready, _, _ = select.select([self._r] + list(extra), [], [], timeout)
        except (OSError, ValueError):
            return []
        if self._r in ready:
            try:
                os.read(self._r, 4096)
            except OSError:
                pass
        return [fd for fd in ready if fd != self._r]


class WakingEvent(threading.Event):
    """An Event whose set() also wakes the loop (the reader's node failure, a preemption notice)."""

    def __init__(self, wake: Callable[[], None]) -> None:
        super().__init__()
        self._wake = wake

    def set(self) -> None:
        super().set()
        self._wake()
