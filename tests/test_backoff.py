"""The one retry policy (tui/remote/backoff.py): doubling delays up to the cap, for as long as a host
stays down."""

from __future__ import annotations

from tui.remote.backoff import Backoff


def test_a_host_down_for_thousands_of_tries_waits_the_cap_and_does_not_overflow() -> None:
    # 2 ** 1024 does not fit a float: the 1025th failure used to raise OverflowError (found by mypy:
    # `first * 2 ** n` was an untyped int power).
    backoff = Backoff(period=1.0, first=0.5, cap=15.0)
    delays = [backoff.failed() for _ in range(3000)]
    assert delays[:6] == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0]
    assert set(delays[5:]) == {15.0}
    assert backoff.ok() == 1.0 and backoff.failed() == 0.5
