"""The live counters keep ended nodes' figures between reports (issue 17: idle CPU with 500 ended
jobs). The figures with the cache must equal those of a tracker fed the same things and priced from
scratch, exactly, across the changes that can move an ended job's cost: a price change, a job
ending, a running job taking another GPU (shares in the past), a name change, a node forgotten.
And the cache must be used: a report after the first prices only what still runs."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.spying import record_calls
from tui.cost import counters
from tui.cost.ledger import Ledger
from tui.cost.report import CostContext
from tui.cost.settings import HostPrice
from tui.cost.tracker import CostTracker

NOW = 1_800_000_000.0
GPUS = [f"G{i}" for i in range(4)]
PRICE = HostPrice(3.6, "USD", "on-demand", "test")
HELLO = {"gpu": {"gpus": [{"uuid": u} for u in GPUS]}}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """One clock for both trackers, so "now" is the same instant for the cached and the scratch report."""
    now = [NOW]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def job(i: int, state: str) -> dict[str, Any]:
    return {"id": f"J{i:04d}", "node": "0", "name": f"job {i}", "state": state}


def records(i: int, ended: bool) -> list[dict[str, Any]]:
    """Jobs that overlap (each starts 40 s after the last and runs 100 s or on), on one or two GPUs."""
    start = NOW - 20_000 + 40 * i
    recs: list[dict[str, Any]] = [
        {"kind": "state", "state": "starting", "t": start - 1},
        {"kind": "state", "state": "running", "t": start},
        {"kind": "gpu", "t": start + 5, "gpus": [{"uuid": GPUS[i % 4], "util": 3 if i % 3 else 80}]},
        {"kind": "metric", "t": start + 10, "values": {"step": 10, "total_steps": 1000}},
        {"kind": "metric", "t": start + 30, "values": {"step": 40, "total_steps": 1000}},
    ]
    if ended:
        recs.append({"kind": "state", "state": "exited", "t": start + 100})
    return [dict(r, seq=n + 1) for n, r in enumerate(recs)]


class Feed:
    """Everything both trackers were told, so a fresh one can be fed it all and priced once."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, method: str, *args: Any) -> None:
        self.calls.append((method, args))

    def into(self, tracker: CostTracker) -> CostTracker:
        for method, args in self.calls:
            getattr(tracker, method)(*args)
        return tracker


def fleet(ended: int = 60, running: int = 4, listed: int = 10) -> Feed:
    """`listed`: ended jobs known only from the host's job list (journal not read: the TUI reads
    an ended job's journal only when it is opened), numbered after the others."""
    feed = Feed()
    feed("set_host", "h", PRICE, HELLO, 0.0, NOW - 90_000)
    for i in range(ended + running):
        is_ended = i < ended
        feed("on_job", "h", job(i, "exited" if is_ended else "running"))
        feed("on_records", "h", f"J{i:04d}", "0", records(i, is_ended))
    for i in range(ended + running, ended + running + listed):
        feed("on_job", "h", job(i, "failed"))
    return feed


def scratch(feed: Feed) -> dict[str, Any]:
    return feed.into(CostTracker(CostContext())).report()


def live_tracker(feed: Feed) -> CostTracker:
    tracker = feed.into(CostTracker(CostContext()))
    tracker.report()  # fills the cache
    return tracker


def test_cached_report_equals_scratch_while_time_passes(clock: list[float]) -> None:
    feed = fleet()
    tracker = live_tracker(feed)
    for step in (1.0, 7.5, 60.0):
        clock[0] += step
        assert tracker.report() == scratch(feed)


def test_cached_report_equals_scratch_after_a_price_change(clock: list[float]) -> None:
    feed = fleet()
    tracker = live_tracker(feed)
    first = tracker.report()["jobs"][-1]
    cheaper = HostPrice(1.8, "USD", "on-demand", "test")
    feed("set_price", "h", cheaper)
    tracker.set_price("h", cheaper)
    clock[0] += 1
    cached = tracker.report()
    assert cached == scratch(feed)
    # J0000: 100 s alone on one of 4 GPUs; $3.60/h then $1.80/h (no ledger: the price now holds throughout)
    assert (first["id"], first["accrued_usd"]) == ("J0000", pytest.approx(0.025))
    assert cached["jobs"][-1]["accrued_usd"] == pytest.approx(0.0125)


def test_cached_report_equals_scratch_after_a_job_ends_and_a_gpu_is_taken(clock: list[float]) -> None:
    feed = fleet()
    tracker = live_tracker(feed)
    changes = [
        # the first running job ends
        ("on_records", "h", "J0060", "0", [{"seq": 6, "t": NOW - 10, "kind": "state", "state": "exited"}]),
        # a running job shows a second GPU: it shared it all along, so ended jobs on it cost less
        (
            "on_records",
            "h",
            "J0063",
            "0",
            [
                {
                    "seq": 6,
                    "t": NOW - 5,
                    "kind": "gpu",
                    "gpus": [{"uuid": "G2", "util": 90}, {"uuid": "G0", "util": 90}],
                }
            ],
        ),
        ("on_job", "h", job(3, "exited") | {"name": "renamed"}),  # an ended job's name
        ("forget", "h", "J0004", "0"),
    ]
    for method, *args in changes:
        before = tracker.report()
        feed(method, *args)
        getattr(tracker, method)(*args)
        clock[0] += 2
        after = tracker.report()
        assert after == scratch(feed), method
    assert after != before


def test_a_listed_job_whose_journal_arrives_is_priced(clock: list[float]) -> None:
    """A job known only from the list costs nothing known; once its journal is read it is priced."""
    feed = fleet()
    tracker = live_tracker(feed)
    assert next(j for j in tracker.report()["jobs"] if j["id"] == "J0064")["accrued_usd"] == 0.0
    feed("on_records", "h", "J0064", "0", records(64, True))
    tracker.on_records("h", "J0064", "0", records(64, True))
    clock[0] += 1
    cached = tracker.report()
    assert cached == scratch(feed)
    assert next(j for j in cached["jobs"] if j["id"] == "J0064")["accrued_usd"] > 0


def test_cached_report_equals_scratch_with_a_ledger(clock: list[float], tmp_path: Any) -> None:
    """With a ledger the host's price periods and the removed jobs come from state.db: both trackers
    read one ledger, the cached one reporting every second, the scratch one once."""
    ledger = Ledger(tmp_path / "state.db")
    feed = fleet(ended=20, running=2)
    tracker = feed.into(CostTracker(CostContext(), ledger))
    tracker.report()
    feed("forget", "h", "J0001", "0")  # gone from the host: now a ledger job
    tracker.forget("h", "J0001", "0")
    clock[0] += 1
    cached = tracker.report()
    assert cached == feed.into(CostTracker(CostContext(), ledger)).report()
    assert [j["id"] for j in cached["jobs"] if j["from"] == "ledger"] == ["J0001"]


def test_a_report_after_the_first_prices_only_running_nodes(
    clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    feed = fleet(ended=200, running=3, listed=50)
    tracker = live_tracker(feed)
    priced = record_calls(monkeypatch, counters, "_job_cost", lambda run, *args: run.job)
    clock[0] += 1
    tracker.report()
    assert sorted(priced) == ["J0200", "J0201", "J0202"]
    priced.clear()
    tracker.on_records("h", "J0200", "0", [{"seq": 6, "t": NOW - 1, "kind": "state", "state": "exited"}])
    tracker.report()  # a job ended: every figure is made again once
    assert len(priced) == 253
