"""What the user's side has told, in notify.db beside state.db (its own file: creating state.db
would skip the job index's rebuild), so two processes or two runs never tell the same
thing twice: a message is claimed (an INSERT that only one writer wins) before it is sent.

Targets are keyed by a hash of their URL (a URL may hold a token: none is stored). Each target
counts from when gpudeck first saw it, so a target added today is not sent a year of old ends.
Hosts: when each last answered and since when it fails (`host_unreachable`, once per outage)."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

from . import paths
from .store import connect_state_db

SCHEMA = """
CREATE TABLE IF NOT EXISTS notify_sent (key TEXT PRIMARY KEY, t REAL NOT NULL);
CREATE TABLE IF NOT EXISTS notify_targets (target TEXT PRIMARY KEY, since REAL NOT NULL);
CREATE TABLE IF NOT EXISTS notify_hosts (
    host TEXT PRIMARY KEY,
    answered_at REAL,             -- last time it answered (NULL: never seen answering)
    failing_since REAL,           -- first failure of the current run of failures
    fails INTEGER NOT NULL DEFAULT 0,
    told INTEGER NOT NULL DEFAULT 0  -- this outage's host_unreachable was sent
);
"""


def target_key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


class Ledger:
    def __init__(self) -> None:
        self.db = connect_state_db(paths.state_db().with_name("notify.db"))
        self.db.executescript(SCHEMA)

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """One writer at a time across processes (the connection autocommits otherwise)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    def since(self, url: str, now: float | None = None) -> float:
        """When this target was first seen (now, the first time)."""
        key = target_key(url)
        self.db.execute(
            "INSERT OR IGNORE INTO notify_targets (target, since) VALUES (?, ?)", (key, now or time.time())
        )
        row = self.db.execute("SELECT since FROM notify_targets WHERE target = ?", (key,)).fetchone()
        return float(row[0])

    def claim(self, url: str, what: str) -> bool:
        """True for the one caller that may send `what` to this target; False when it was claimed."""
        cur = self.db.execute(
            "INSERT OR IGNORE INTO notify_sent (key, t) VALUES (?, ?)",
            (f"{target_key(url)}:{what}", time.time()),
        )
        return cur.rowcount == 1

    # -- hosts -------------------------------------------------------------------------------------

    def answered(self, host: str, now: float) -> bool:
        """This host answered; True when it had been told unreachable (a recovery to tell)."""
        with self._tx():
            row = self.db.execute("SELECT told FROM notify_hosts WHERE host = ?", (host,)).fetchone()
            self.db.execute(
                "INSERT INTO notify_hosts (host, answered_at, failing_since, fails, told) VALUES (?, ?, NULL, 0, 0) "
                "ON CONFLICT(host) DO UPDATE SET answered_at = ?, failing_since = NULL, fails = 0, told = 0",
                (host, now, now),
            )
        return bool(row and row[0])

    def failed(self, host: str, now: float, fails: int, after: float) -> float | None:
        """This host did not answer. When it is now unreachable (it answered once, failed `fails`
        times in a row over `after` seconds) and this caller is the one to tell it: since when it
        fails. Else None."""
        try:
            with self._tx():
                self.db.execute(
                    "UPDATE notify_hosts SET fails = fails + 1, failing_since = COALESCE(failing_since, ?) "
                    "WHERE host = ? AND answered_at IS NOT NULL",
                    (now, host),
                )
                row = self.db.execute(
                    "SELECT failing_since FROM notify_hosts WHERE host = ? AND told = 0 AND fails >= ? "
                    "AND failing_since <= ?",
                    (host, fails, now - after),
                ).fetchone()
                if row is None:
                    return None
                won = self.db.execute("UPDATE notify_hosts SET told = 1 WHERE host = ? AND told = 0", (host,))
                return float(row[0]) if won.rowcount == 1 else None
        except sqlite3.Error:
            return None
