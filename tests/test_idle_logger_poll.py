"""Issue 33: the logger-files look, on for every job by default, follows the job's output: a quiet
job's look sleeps (a minute, or until output), output wakes it once, and while it polls (once a
second) more output sets a flag without waking it at each chunk (it did: a poll per printed line)."""

from __future__ import annotations

from typing import Any

from remote_agent.tbread.follow import PollingIn
from tests.support.waiting import wait_for


class Counting(PollingIn):
    FOLLOWS_OUTPUT = True

    def __init__(self) -> None:
        super().__init__(lambda points: None, "counting")
        self.polls = 0

    def _poll(self) -> list[dict[str, Any]]:
        self.polls += 1
        return []

    def _save(self) -> None:
        pass


def test_output_wakes_a_quiet_look_once_and_an_active_one_not_at_all() -> None:
    look = Counting()
    look._thread.start()
    try:
        look.output_came()  # the job printed: its quiet wait ends at once
        wait_for(lambda: look.polls >= 1, timeout=30, what="the look woken by output")
        for _ in range(100):  # a chunk a line: a flag, not a wake-up each
            look.output_came()
        assert not look._wake.is_set()
    finally:
        look.finish()
    assert look.polls <= 4, look.polls  # the woken poll, the final read, at most two 1 s polls between
