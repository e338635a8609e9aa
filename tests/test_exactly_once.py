"""One exactly-once rule (tui/exactly_once.py) for the CLI's streams and the TUI's model: the same
batches, in the same order, give the same records to both — a duplicate once, an overlap from its
first new record, a batch that would leave a gap (a stale subscription's) not at all."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tui.exactly_once import continues, fresh, owed_output
from tui.fleet import Fleet
from tui.remote.reconnect import ReconnectingClient
from tui.remote.transport import Transport

JOB = "20261201-000000-abcdef"


def rec(seq: int) -> dict[str, Any]:
    return {"seq": seq, "t": 1000.0 + seq, "kind": "metric", "values": {"step": seq, "loss": 1.0 / seq}}


BATCHES = [
    [rec(1), rec(2)],
    [rec(2)],
    [rec(5), rec(6)],
    [rec(2), rec(3)],
    [rec(3), rec(4), rec(5)],
    [rec(7)],
    [rec(6), rec(7)],
]
# 5..6 after 2 would leave a gap (dropped); 2..3 and 3..5 overlap; 7 after 5 leaves a gap; 6..7 resends it
TAKEN = [1, 2, 3, 4, 5, 6, 7]


def _cli_takes(batches: list[list[dict[str, Any]]]) -> list[int]:
    got: list[int] = []
    client = ReconnectingClient(
        "h", lambda: Transport(), on_events=lambda job, node, recs: got.extend(r["seq"] for r in recs)
    )
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


def _push(offset: int, data: bytes, skip_to: int | None = None) -> dict[str, Any]:
    push = {
        "push": "output",
        "job": JOB,
        "node": "0",
        "offset": offset,
        "data": base64.b64encode(data).decode(),
    }
    return push if skip_to is None else {**push, "skip_to": skip_to}


def test_a_skip_to_push_moves_the_owed_byte_past_the_hole_once() -> None:
    # The output cap dropped [10, 1000): the agent pushes a line saying so with skip_to=1000. The CLI's
    # client takes it once and owes byte 1000 next; the same push again (a re-follow's, or an old
    # connection's) and a stale one from before the hole give nothing, and bytes in the hole neither.
    got: list[bytes] = []
    client = ReconnectingClient(
        "h", lambda: Transport(), on_output=lambda job, node, data, end: got.append(data or b"")
    )
    client.output_followed.add((JOB, "0"))
    marker = b"[gpudeck: 990 bytes dropped]\n"
    for push in (
        _push(0, b"0123456789"),
        _push(10, marker, skip_to=1000),
        _push(10, marker, skip_to=1000),
        _push(4, b"456789"),
        _push(4, marker, skip_to=1000),
        _push(500, b"in the hole"),
        _push(1000, b"after"),
        _push(10, marker, skip_to=1000),
        _push(1003, b"ter!"),
    ):
        client._deliver_output(push)
    assert got == [b"0123456789", marker, b"after", b"r!"]
    assert client.output_offset[(JOB, "0")] == 1007


def test_a_skip_to_push_before_the_owed_byte_or_past_it_gives_nothing() -> None:
    marker = b"[dropped]\n"
    owed_skip = _push(10, marker, skip_to=1000)
    assert owed_output(owed_skip, 10, 10) == (marker, 1000)
    assert owed_output(owed_skip, 10, 500) == (marker, 1000)  # owed inside the hole: the rest is skipped
    assert owed_output(owed_skip, 10, 1000) is None  # taken already
    assert owed_output(owed_skip, 10, 5) is None  # bytes before the hole still owed: a stale subscription's


def test_an_output_end_counts_only_at_the_owed_byte() -> None:
    ends: list[dict[str, Any]] = []
    client = ReconnectingClient(
        "h", lambda: Transport(), on_output=lambda job, node, data, end: end and ends.append(end)
    )
    client.output_followed.add((JOB, "0"))
    client._deliver_output(_push(0, b"abc"))
    end = {"push": "output_end", "job": JOB, "node": "0", "state": "exited", "exit_code": 0, "signal": None}
    client._deliver_output({**end, "offset": 2})  # a stale subscription's end: byte 3 is owed, not 2
    assert ends == [] and (JOB, "0") in client.output_followed
    client._deliver_output({**end, "offset": 3})
    assert [e["offset"] for e in ends] == [3] and (JOB, "0") not in client.output_followed


def test_a_batch_the_agent_vouches_for_crosses_the_seqs_a_cut_took() -> None:
    """A journal cut under a tail loses seqs for good: the agent's push says `after` (every seq past
    it is accounted for), so the CLI and the TUI take what follows instead of waiting forever on a
    re-tail that cannot fill the gap; a stale subscription's batch (after past what was taken) is
    still dropped."""
    got: list[int] = []
    client = ReconnectingClient(
        "h",
        lambda: Transport(),
        on_events=lambda job, node, recs, after=None: got.extend(r["seq"] for r in recs),
    )
    client.followed.add((JOB, "0"))
    client._deliver(JOB, "0", [rec(1), rec(2)], after=0)
    client._deliver(JOB, "0", [rec(5), rec(6)], after=2)  # 3 and 4 went with the cut
    client._deliver(JOB, "0", [rec(9)], after=8)  # a stale subscription's: 7 and 8 are owed
    client._deliver(JOB, "0", [rec(5), rec(6)])  # no word from the agent: the old rule
    assert got == [1, 2, 5, 6]

    fleet = Fleet(clock=lambda: 0.0)
    fleet.apply_events("local", JOB, "0", [rec(1), rec(2)], 0)
    fleet.apply_events("local", JOB, "0", [rec(5), rec(6)], 2)
    fleet.apply_events("local", JOB, "0", [rec(9)], 8)
    assert fleet.jobs[JOB].nodes["0"].last_seq == 6
