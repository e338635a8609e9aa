"""Retry a provider call on throttling, 5xx and timeouts, with doubling delays.

The same schedule as tui/remote/backoff.py (first, 2×first, 4×first … up to cap), written out here:
the core (tui/actions) may not import tui/remote, and this is four lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .model import RetryableError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # calls in all, the first included
    first: float = 0.5  # seconds before the first retry, doubling…
    cap: float = 8.0  # …up to this


def retrying(
    call: Callable[[], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    before_retry: Callable[[], T | None] | None = None,
) -> T:
    """call() until it answers or raises a non-retryable error; the last RetryableError after `attempts`.

    before_retry: asked before each retry; a non-None answer is returned instead of calling again
    (a launch looks up its tag there, so a lost answer never makes a second instance).
    """
    for attempt in range(1, policy.attempts + 1):
        try:
            return call()
        except RetryableError:
            if attempt == policy.attempts:
                raise
            sleep(min(policy.cap, policy.first * 2 ** (attempt - 1)))
            if before_retry is not None:
                found = before_retry()
                if found is not None:
                    return found
    raise AssertionError("unreachable")  # the loop returns or raises
