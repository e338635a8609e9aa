"""Wait on conditions, never on sleeps: tests poll until true or fail with what they saw last."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T], timeout: float = 15.0, interval: float = 0.02, what: str = "condition"
) -> T:
    deadline = time.monotonic() + timeout
    last: T = condition()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.1f}s waiting for {what}; last value: {last!r}")
        time.sleep(interval)
        last = condition()
    return last
