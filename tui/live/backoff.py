"""Retry delays for polling: the normal period while a host answers, doubling on failures."""

from __future__ import annotations


class Backoff:
    def __init__(self, period: float = 1.0, first: float = 1.0, cap: float = 30.0) -> None:
        self.period, self.first, self.cap = period, first, cap
        self.failures = 0

    def ok(self) -> float:
        """The host answered: poll again after the normal period."""
        self.failures = 0
        return self.period

    def failed(self) -> float:
        """It did not: wait 1, 2, 4 … up to `cap` seconds, so a dead host costs almost nothing."""
        self.failures += 1
        return min(self.cap, self.first * 2 ** (self.failures - 1))
