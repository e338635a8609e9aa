"""The cost ledger: every cost fact, in state.db (WAL), written the moment gpudeck learns it.

Facts: the price a host was billed at and its source (`price`), a job node's start and end with
what it had cost (`job_start`, `job_end`), automatic actions (`budget_warning`, `budget_stop`,
`idle_stop`, `autostop_paused`, `autostop_resumed`), and the client's fleet-rule heartbeat
(`rules_active`). Recording is idempotent (a fact seen twice is one row), so every `cost` run and
every TUI refresh may simply record what it sees. A job whose directory was removed, or a host
that is gone, still answers `cost --since` from here.

Its own sqlite connection (not Store's): the ledger may be written from a worker thread while the
store serves the UI, and WAL lets both proceed.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store import connect_state_db, say

SCHEMA = """
CREATE TABLE IF NOT EXISTS cost_ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,              -- when it happened, on the host's clock (epoch s)
    recorded_at REAL NOT NULL,     -- when gpudeck wrote it, on the client's clock
    host TEXT NOT NULL,
    job TEXT NOT NULL DEFAULT '',  -- '' for host facts
    node TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    amount REAL,                   -- money (job_end: what the node cost)
    per_hour REAL,                 -- price facts
    currency TEXT,
    source TEXT,
    data TEXT NOT NULL DEFAULT '{}',
    UNIQUE (host, job, node, kind, at)
);
CREATE INDEX IF NOT EXISTS cost_ledger_at ON cost_ledger(at);
"""


@dataclass
class Fact:
    at: float
    host: str
    kind: str
    job: str = ""
    node: str = ""
    amount: float | None = None
    per_hour: float | None = None
    currency: str | None = None
    source: str | None = None
    data: dict[str, Any] | None = None


class Ledger:
    def __init__(self, path: Path, warn: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.writes = 0  # facts written by this object: a reader's cache of ledger queries keys on it
        self._warn = warn or say
        self.unwritable: str | None = (
            None  # why a write failed: later facts are not tried (each waits on the lock)
        )
        # FULL: a fact acknowledged is a fact kept, even if the machine loses power right after.
        self._db = connect_state_db(path, synchronous="FULL", warn=warn)
        self._db.executescript(SCHEMA)

    @classmethod
    def read_only_copy(cls, path: Path) -> Ledger:
        """A ledger read from a state.db that cannot be written (a read-only home): an in-memory
        copy, so reports still work; what they would record is not kept."""
        ledger = cls.__new__(cls)
        ledger.path, ledger._lock, ledger.writes, ledger._warn, ledger.unwritable = (
            path,
            threading.Lock(),
            0,
            say,
            None,
        )
        ledger._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        if path.exists():
            source = sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)
            try:
                source.backup(ledger._db)
            finally:
                source.close()
        ledger._db.executescript(SCHEMA)
        return ledger

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, fact: Fact, recorded_at: float) -> bool:
        """True if this fact is new (or, for job_end, changed: a job's final figures may be refined
        when a later read sees more of its journal). Unchanged facts write nothing."""
        upsert = (
            "ON CONFLICT(host, job, node, kind, at) DO UPDATE SET amount = excluded.amount, "
            "currency = excluded.currency, data = excluded.data, recorded_at = excluded.recorded_at "
            "WHERE cost_ledger.data IS NOT excluded.data OR cost_ledger.amount IS NOT excluded.amount"
            if fact.kind == "job_end"
            else "ON CONFLICT DO NOTHING"
        )
        with self._lock:
            if self.unwritable is not None:
                return False
            try:
                cur = self._db.execute(
                    "INSERT INTO cost_ledger (at, recorded_at, host, job, node, kind, amount, per_hour, currency, source, data) "
                    f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) {upsert}",
                    (
                        fact.at,
                        recorded_at,
                        fact.host,
                        fact.job,
                        fact.node,
                        fact.kind,
                        fact.amount,
                        fact.per_hour,
                        fact.currency,
                        fact.source,
                        json.dumps(fact.data or {}, sort_keys=True),
                    ),
                )
            except sqlite3.OperationalError as exc:  # locked by another process, read-only, disk full
                # A fact not kept is not lost: it comes again from the journals at the next read.
                self.unwritable = str(exc)
                self._warn(
                    f"warning: {self.path}: {exc}; cost facts not recorded this time (the hosts' journals keep them)"
                )
                return False
            wrote = cur.rowcount > 0
            self.writes += wrote
        return wrote

    def record_price(
        self,
        host: str,
        at: float,
        per_hour: float | None,
        currency: str,
        source: str,
        recorded_at: float,
        terms: dict[str, Any] | None = None,
    ) -> bool:
        """A price row only when the host's price — or its billing terms (`terms`: provider, market)
        — differs from the last one recorded. `per_hour` None: the price was removed (billing ends
        at `at`); recorded only after a known price. A change is never dated before the last row:
        periods stay in the order they happened."""
        last = self.prices(host)
        same_price = (
            bool(last)
            and last[-1].per_hour == per_hour
            and (per_hour is None or last[-1].currency == currency)
        )
        if same_price and (terms is None or per_hour is None or (last[-1].data or {}) == terms):
            return False
        if per_hour is None and not last:
            return False  # never priced: nothing to end
        if last and at <= last[-1].at:
            at = last[-1].at + 1e-3
        return self.record(
            Fact(at, host, "price", per_hour=per_hour, currency=currency, source=source, data=terms),
            recorded_at,
        )

    def facts(
        self, since: float | None = None, kind: str | None = None, host: str | None = None
    ) -> list[Fact]:
        sql = "SELECT at, host, kind, job, node, amount, per_hour, currency, source, data FROM cost_ledger WHERE 1=1"
        params: list[Any] = []
        if since is not None:
            sql += " AND at >= ?"
            params.append(since)
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        if host is not None:
            sql += " AND host = ?"
            params.append(host)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY at, id", params).fetchall()
        return [
            Fact(
                at=r[0],
                host=r[1],
                kind=r[2],
                job=r[3],
                node=r[4],
                amount=r[5],
                per_hour=r[6],
                currency=r[7],
                source=r[8],
                data=json.loads(r[9]),
            )
            for r in rows
        ]

    def prices(self, host: str) -> list[Fact]:
        return self.facts(kind="price", host=host)

    def job_ends(self, since: float | None = None) -> list[Fact]:
        return self.facts(since=since, kind="job_end")

    # -- fleet rules: enforced by the client while it runs, so say when it stopped running --------

    def mark_rules_active(self, now: float) -> None:
        """The TUI calls this every minute while it enforces fleet rules (one row per minute)."""
        self.record(Fact(at=float(int(now // 60) * 60), host="", kind="rules_active"), now)

    def rules_paused_since(self, now: float, stale_after: float = 180.0) -> float | None:
        """None while a client enforces fleet rules; else when the last one stopped (or 0: never ran)."""
        with self._lock:
            row = self._db.execute(
                "SELECT MAX(recorded_at) FROM cost_ledger WHERE kind = 'rules_active'"
            ).fetchone()
        last = row[0] if row else None
        if last is None:
            return 0.0
        return None if now - last < stale_after else float(last)
