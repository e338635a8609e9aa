"""The cost ledger: in state.db beside the store, WAL, idempotent, answering for removed jobs."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from tests.test_cost_counters import T0, journal
from tui.cost.billing import PricePeriod
from tui.cost.collect import HostSnapshot
from tui.cost.ledger import Fact, Ledger
from tui.cost.report import CostContext, build, host_periods
from tui.cost.settings import HostPrice
from tui.store import Store

PRICE = HostPrice(3.6, "USD", "on-demand", "hosts.toml price_per_hour")


def test_ledger_shares_state_db_with_the_store_in_wal(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = Store(db)
    with Ledger(db) as ledger:
        assert ledger.record(Fact(T0, "h", "job_start", "J", "0"), T0)
        assert not ledger.record(Fact(T0, "h", "job_start", "J", "0"), T0 + 5)  # seen twice: one row
        assert store.list_jobs() == []  # both schemas live side by side
    store.close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT COUNT(*) FROM cost_ledger").fetchone()[0] == 1
    con.close()


def test_a_fact_written_is_kept_across_reopen_and_job_end_is_updated(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with Ledger(db) as ledger:
        ledger.record(Fact(T0, "h", "job_end", "J", "0", amount=1.0, currency="USD"), T0)
        ledger.record(Fact(T0, "h", "job_end", "J", "0", amount=1.5, currency="USD"), T0 + 1)
    with Ledger(db) as ledger:
        [fact] = ledger.job_ends()
        assert fact.amount == 1.5


def test_price_rows_only_on_change_each_from_when_it_was_set(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        assert ledger.record_price("h", T0, 3.6, "USD", "a", T0)
        assert not ledger.record_price("h", T0 + 10, 3.6, "USD", "a", T0 + 10)
        assert ledger.record_price("h", T0 + 1000, 7.2, "USD", "b", T0 + 1000)
        periods = host_periods("h", HostPrice(7.2, "USD", "on-demand", "b"), ledger, None, T0 + 2000)
    # Nothing before the first price was set is billed at it (issue 11 finding 13: it was, from -inf).
    assert [(p.start, p.end, p.per_hour) for p in periods] == [(T0, T0 + 1000, 3.6), (T0 + 1000, None, 7.2)]


def test_fleet_rules_paused_since(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        assert ledger.rules_paused_since(T0) == 0.0  # never enforced
        ledger.mark_rules_active(T0)
        assert ledger.rules_paused_since(T0 + 60) is None  # a client enforces them now
        assert ledger.rules_paused_since(T0 + 3600) == T0


def test_build_records_facts_and_removed_jobs_come_from_the_ledger(tmp_path: Path) -> None:
    recs = journal(T0, T0 + 1000, reason="budget: accrued 1.00 >= budget 1.00")
    recs.insert(
        2,
        {
            "kind": "event",
            "event": "budget_warning",
            "t": T0 + 800,
            "seq": 50,
            "data": {"accrued": 0.8, "budget": 1.0},
        },
    )
    job = {"id": "J", "node": "0", "name": "jname", "state": "stopped", "ended_at": T0 + 1000}
    snap = HostSnapshot("h", 0.0, T0 + 2000, [], None, [job], {("J", "0"): recs})
    with Ledger(tmp_path / "state.db") as ledger:
        # hosts.toml was written before the job ran: its price holds from then.
        report = build([snap], {"h": PRICE}, CostContext(), ledger, settings_changed_at=T0 - 1)
        assert report["jobs"][0]["accrued_usd"] == pytest.approx(1.0)
        kinds = {f.kind for f in ledger.facts()}
        assert {"price", "job_start", "job_end", "budget_stop", "budget_warning"} <= kinds
        # The job's directory is removed: the host no longer reports it, the ledger still does.
        empty = HostSnapshot("h", 0.0, T0 + 3000, [], None, [], {})
        report = build([empty], {"h": PRICE}, CostContext(), ledger)
    [row] = report["jobs"]
    assert row["id"] == "J" and row["from"] == "ledger" and row["accrued_usd"] == pytest.approx(1.0)
    assert row["reason"].startswith("budget")


def test_spot_periods_win_over_settings(tmp_path: Path) -> None:
    spot = [
        PricePeriod(-math.inf, T0 + 500, 0.36, "USD", "spot"),
        PricePeriod(T0 + 500, None, 0.72, "USD", "spot"),
    ]
    recs = journal(T0, T0 + 1000)
    snap = HostSnapshot(
        "h",
        0.0,
        T0 + 2000,
        [],
        None,
        [{"id": "J", "node": "0", "name": "j", "state": "exited"}],
        {("J", "0"): recs},
    )
    report = build([snap], {"h": PRICE}, CostContext(), None, spot={"h": spot})
    # 500 s × 0.0001 + 500 s × 0.0002 = 0.05 + 0.10 = $0.15
    assert report["jobs"][0]["accrued_usd"] == pytest.approx(0.15)


def test_unchanged_job_end_writes_nothing(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        fact = Fact(T0, "h", "job_end", "J", "0", amount=1.0, currency="USD", data={"accrued": {"USD": 1.0}})
        assert ledger.record(fact, T0)
        assert not ledger.record(fact, T0 + 1)  # a TUI refresh re-recording the same end: no write
        assert ledger.record(Fact(T0, "h", "job_end", "J", "0", amount=1.2, currency="USD"), T0 + 2)
        assert [f.amount for f in ledger.job_ends()] == [1.2]
