"""One exactly-once rule (tui/exactly_once.py) for the CLI's streams and the TUI's model: the same
batches, in the same order, give the same records to both — a duplicate once, an overlap from its
first new record, a batch that would leave a gap (a stale subscription's) not at all."""

from __future__ import annotations

from typing import Any

import pytest

from tui.exactly_once import continues, fresh
from tui.fleet import Fleet
from tui.remote.reconnect import ReconnectingClient
from tui.remote.transport import Transport

JOB = "20261201-000000-abcdef"


def rec(seq: int) -> dict[str, Any]:
    return {"seq": seq, "t": 1000.0 + seq, "kind": "metric", "values": {"step": seq, "loss": 1.0 / seq}}


BATCHES = [[rec(1), rec(2)], [rec(2)], [rec(5), rec(6)], [rec(2), rec(3)], [rec(3), rec(4), rec(5)], [rec(7)],
           [rec(6), rec(7)]]
# 5..6 after 2 would leave a gap (dropped); 2..3 and 3..5 overlap; 7 after 5 leaves a gap; 6..7 resends it
TAKEN = [1, 2, 3, 4, 5, 6, 7]


def _cli_takes(batches: list[list[dict[str, Any]]]) -> list[int]:
    got: list[int] = []
    client = ReconnectingClient("h", lambda: Transport(), on_events=lambda job, node, recs: got.extend(r["seq"] for r in recs))
    client.followed.add((JOB, "0"))
    for batch in batches:
        client._deliver(JOB, "0", batch)
    return got


def _tui_takes(batches: list[list[dict[str, Any]]]) -> list[int]:
    fleet = Fleet(clock=lambda: 0.0)
    steps: list[int] = []
    for batch in batches:
        before = fleet.jobs[JOB].nodes["0"].last_seq if JOB in fleet.jobs else 0
        fleet.apply_events("local", JOB, "0", batch)
        after = fleet.jobs[JOB].nodes["0"].last_seq
        steps.extend(s for s in (r["seq"] for r in batch) if before < s <= after)
    return sorted(set(steps))


def test_the_cli_and_the_tui_take_the_same_records() -> None:
    assert _cli_takes(BATCHES) == TAKEN
    assert _tui_takes(BATCHES) == TAKEN


@pytest.mark.parametrize(("first", "last", "ok"), [(1, 0, True), (3, 2, True), (2, 2, True), (4, 2, False)])
def test_continues(first: int, last: int, ok: bool) -> None:
    assert continues(first, last) is ok


def test_fresh_sorts_and_cuts() -> None:
    assert fresh([3, 1, 2, 4], 1, int) == [2, 3, 4]
    assert fresh([5, 6], 2, int) == []
    assert fresh([1, 2], 2, int) == []
