"""The periodic polls of a fleet (issue #17): one schedule and a few pool threads, not a Textual worker,
a timer and three messages per host per poll; and the inbox drained in batches, not per wake. Real
threads; the app driven through a real replay."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.tui import sync, until
from tests.support.waiting import wait_for
from tui.app import GpuDeckApp
from tui.live.inbox import Inbox, Update
from tui.live.polls import PollPool, PollSchedule
from tui.remote.replay import Recording
from tui.services import connections as feed
from tui.services import intake

RECORDING = Path(__file__).parent / "data" / "recordings" / "session.jsonl"


def _polled(inbox: Inbox) -> list[tuple[str, str, int, BaseException | None]]:
    return [(u.host, *u.data) for u in inbox.drain() if u.kind == "polled"]


def test_the_schedule_hands_out_what_is_due_once_and_forgets_a_dropped_host() -> None:
    s = PollSchedule()
    s.arm("a", "gpus", 10.0, 1)
    s.arm("a", "jobs", 12.0, 1)
    s.arm("b", "gpus", 11.0, 3)
    assert s.take_due(9.9) == []
    assert sorted(s.take_due(11.0)) == [("a", "gpus", 1), ("b", "gpus", 3)]
    assert s.take_due(11.5) == []  # taken: in flight until re-armed
    s.drop("a")
    assert s.due_at("a", "jobs") is None and s.take_due(100.0) == []


def test_each_poll_outcome_reaches_the_inbox_and_a_stuck_poll_holds_no_other() -> None:
    inbox = Inbox()
    pool = PollPool(inbox, threads=2)
    release = threading.Event()
    got: list[tuple[str, str, int, BaseException | None]] = []

    def stuck() -> None:
        release.wait(10)

    def broken() -> None:
        raise OSError("pipe closed")

    try:
        pool.submit("frozen", "gpus", 1, stuck)
        pool.submit("ok", "jobs", 2, lambda: None)
        pool.submit("bad", "gpus", 5, broken)
        wait_for(lambda: got.extend(_polled(inbox)) or len(got) == 2, what="two outcomes past the stuck poll")
        assert ("ok", "jobs", 2, None) in got
        bad = next(o for o in got if o[0] == "bad")
        assert isinstance(bad[3], OSError) and str(bad[3]) == "pipe closed"
        release.set()
        wait_for(lambda: got.extend(_polled(inbox)) or len(got) == 3, what="the stuck poll's outcome")
        assert ("frozen", "gpus", 1, None) in got
    finally:
        release.set()
        pool.close()
    pool.submit("late", "gpus", 1, lambda: None)  # closed: nothing runs, nothing arrives
    assert _polled(inbox) == []


def test_the_inbox_never_drops_a_poll_outcome_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    from tui.live import inbox as inbox_module

    monkeypatch.setattr(inbox_module, "MAX_PENDING", 2)
    inbox = Inbox()
    for kind in ("gpus", "gpus", "gpus", "polled"):
        inbox.put(Update(kind, "h", ("gpus", 1, None) if kind == "polled" else {}))
    assert [u.kind for u in inbox.drain()] == ["gpus", "gpus", "polled"] and inbox.dropped == 1


@sync
async def test_a_replayed_fleet_is_polled_without_a_worker_per_poll(
    gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed, "GPU_PERIOD", 0.05)
    monkeypatch.setattr(feed, "JOBS_PERIOD", 0.05)
    recording = Recording.load(RECORDING)
    transports: list[Any] = []

    def transport(host: str) -> Any:
        transports.append(recording.transport(host, speed=0))
        return transports[-1]

    app = GpuDeckApp(hosts=recording.hosts, transport=transport, store=None)
    groups: list[str] = []
    in_thread = app.connections.in_thread

    def counted(fn: Any, *, group: str, **kw: Any) -> Any:
        groups.append(group)
        return in_thread(fn, group=group, **kw)

    app.connections.in_thread = counted  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            pilot,
            lambda: transports and all(t.exhausted("gpus") and t.exhausted("jobs") for t in transports),
            "every recorded poll answered",
        )
        host = app.fleet.hosts[recording.hosts[0]]
        await until(pilot, lambda: host.gpus or host.cpu is not None, "the polls' answers in the fleet")
    assert groups and not [g for g in groups if g.split(":")[0] in ("gpus", "jobs")], groups


@sync
async def test_a_stream_of_wakes_is_drained_at_most_once_per_gap(gpudeck_home: Path) -> None:
    """Reader threads wake the app each time the inbox goes from empty to not: ~100 times a second
    at 64 hosts. Drains keep DRAIN_GAP apart, the updates meanwhile wait in the inbox (one batch)."""
    recording = Recording.load(RECORDING)
    app = GpuDeckApp(hosts=recording.hosts, transport=lambda h: recording.transport(h, speed=0), store=None)
    drains: list[float] = []
    drain = app.connections.intake.drain

    def counted() -> None:
        drains.append(time.monotonic())
        drain()

    app.connections.intake.drain = counted  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.fleet.hosts[recording.hosts[0]].status == "connected", "the replay up")
        sent = threading.Event()

        def wake_often() -> None:  # as a reader thread would: one small update at a time
            for _ in range(200):
                app.connections.inbox.put(Update("noise", "local"))
                time.sleep(0.001)
            sent.set()

        drains.clear()
        t0 = time.monotonic()
        threading.Thread(target=wake_often, daemon=True).start()
        await until(pilot, lambda: sent.is_set() and not len(app.connections.inbox), "every update drained")
        spent = time.monotonic() - t0
    assert 2 <= len(drains) <= spent / intake.DRAIN_GAP + 2, (len(drains), spent)
