"""The one retry policy: the normal period while a host answers, doubling delays while it does not.

Fed by config.toml's `[ssh] backoff_initial` / `backoff_max` everywhere a connection is retried:
the CLI's ReconnectingClient and the TUI's connection service.
"""

from __future__ import annotations


class Backoff:
    def __init__(self, period: float = 1.0, first: float = 0.5, cap: float = 15.0) -> None:
        self.period, self.first, self.cap = period, first, cap
        self.failures = 0

    def ok(self) -> float:
        """The host answered: go on after the normal period."""
        self.failures = 0
        return self.period

    def failed(self) -> float:
        """It did not: wait first, 2×first, 4×first … up to `cap`, so a dead host costs almost nothing."""
        self.failures += 1
        # 2.0 ** 1023 is the largest power of two a float holds: a host down for a thousand tries
        # and more (hours at the cap) stays at the cap instead of overflowing.
        return min(self.cap, self.first * 2.0 ** min(self.failures - 1, 1023))
