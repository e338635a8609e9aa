"""state.db: derived state only (which hosts hold a job, last seq per (job, node), later the ledger).

Settings never live here. Safe to delete: the journals on the hosts are the source of truth.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .printable import warn

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at REAL NOT NULL,
    nodes TEXT NOT NULL,          -- JSON: [{"host": ..., "node": ...}]
    argv TEXT NOT NULL,           -- JSON list; never env values
    restart_of TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_name ON jobs(name);
CREATE TABLE IF NOT EXISTS seqs (
    job TEXT NOT NULL,
    node TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    PRIMARY KEY (job, node)
);
"""
SHOWN_ENDINGS = "CREATE TABLE IF NOT EXISTS shown_endings (job TEXT PRIMARY KEY, shown_at REAL NOT NULL)"
UI_MARKS = "CREATE TABLE IF NOT EXISTS ui_marks (name TEXT PRIMARY KEY, t REAL NOT NULL)"


@dataclass
class JobRecord:
    id: str
    name: str
    created_at: float
    nodes: list[dict[str, str]]
    argv: list[str] = field(default_factory=list)
    restart_of: str | None = None

    @property
    def hosts(self) -> list[str]:
        return sorted({n["host"] for n in self.nodes})


def connect_state_db(
    path: Path, synchronous: str = "NORMAL", warn: Callable[[str], None] | None = None
) -> sqlite3.Connection:
    """A connection to state.db as every part opens it: private dir, autocommit, WAL, one writer lock
    per connection held by its owner (the store, the cost ledger). The file is derived state: one
    that is not a database (or is malformed) is moved aside as `state.db.corrupt-<time>`, said once
    on stderr, and a fresh one is made."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        if not path.parent.is_dir():
            raise
    try:
        return _connect(path, synchronous)
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
        aside = _move_aside(path)
        (warn or say)(
            f"{path}: {exc}; moved it aside to {aside.name} and rebuilt it (it holds derived state only)"
        )
        return _connect(path, synchronous)


def _connect(path: Path, synchronous: str) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=10, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        check = db.execute("PRAGMA quick_check(1)").fetchone()
        if check and check[0] != "ok":
            raise sqlite3.DatabaseError(f"database disk image is malformed ({check[0]})")
    except BaseException:
        db.close()
        raise
    return db


def _move_aside(path: Path) -> Path:
    """The bad file and its WAL/shm companions, renamed out of the way (another process may have
    done it already: then there is nothing left to move)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}-{os.getpid()}")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        except FileNotFoundError:
            pass
    return aside


def say(line: str) -> None:
    """One line on stderr, written at once (stdout stays the command's answer)."""
    warn(f"gpudeck: {line}")


class Store:
    def __init__(self, path: Path, warn: Callable[[str], None] | None = None) -> None:
        """warn: where its one-line warnings go (default: stderr; the TUI shows them instead)."""
        self.path = path
        self._warn = warn or say
        self._lock = threading.Lock()
        self._warned = False
        self._db = connect_state_db(path, warn=self._warn)
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{path}: written by a newer gpudeck (schema {version} > {SCHEMA_VERSION})")
        # A new file: state.db was missing, or corrupt and moved aside. Its job index is empty
        # until rebuilt from the hosts' journals (tui/actions/reindex.py).
        self.fresh = version < SCHEMA_VERSION
        if version < SCHEMA_VERSION:  # only a new file needs a write here: a locked one still reads
            self._db.executescript(SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        try:
            path.chmod(0o600)
        except OSError:
            pass

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- jobs ------------------------------------------------------------------------------------

    def _write(self, *statements: tuple[str, tuple[object, ...]]) -> None:
        """Derived state, safe to lose: a full disk or another process's lock must not fail what
        already happened on a host. Said once, in one line, on stderr."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for sql, params in statements:
                        self._db.execute(sql, params)
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                if not self._warned:
                    self._warned = True
                    self._warn(
                        f"warning: {self.path}: {exc}; not recorded there (derived state: the hosts still have it)"
                    )

    def record_job(self, job: JobRecord) -> None:
        self._write(
            (
                "INSERT OR REPLACE INTO jobs (id, name, created_at, nodes, argv, restart_of) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    job.id,
                    job.name,
                    job.created_at,
                    json.dumps(job.nodes),
                    json.dumps(job.argv),
                    job.restart_of,
                ),
            )
        )

    def get_job(self, job_id: str) -> JobRecord | None:
        rows = self._query("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return rows[0] if rows else None

    def jobs_named(self, name: str) -> list[JobRecord]:
        return self._query("SELECT * FROM jobs WHERE name = ? ORDER BY id DESC", (name,))

    def jobs_with_prefix(self, prefix: str) -> list[JobRecord]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return self._query(
            "SELECT * FROM jobs WHERE id LIKE ? ESCAPE '\\' ORDER BY id DESC", (escaped + "%",)
        )

    def list_jobs(self) -> list[JobRecord]:
        return self._query("SELECT * FROM jobs ORDER BY id DESC", ())

    def remove_job(self, job_id: str) -> None:
        self._write(
            ("DELETE FROM jobs WHERE id = ?", (job_id,)), ("DELETE FROM seqs WHERE job = ?", (job_id,))
        )

    def _query(self, sql: str, params: tuple[object, ...]) -> list[JobRecord]:
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [
            JobRecord(
                id=r[0],
                name=r[1],
                created_at=r[2],
                nodes=json.loads(r[3]),
                argv=json.loads(r[4]),
                restart_of=r[5],
            )
            for r in rows
        ]

    # -- seqs ------------------------------------------------------------------------------------

    def last_seq(self, job: str, node: str) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT last_seq FROM seqs WHERE job = ? AND node = ?", (job, node)
            ).fetchone()
        return int(row[0]) if row else 0

    def set_last_seq(self, job: str, node: str, seq: int) -> None:
        self._write(
            (
                "INSERT INTO seqs (job, node, last_seq) VALUES (?, ?, ?) "
                "ON CONFLICT(job, node) DO UPDATE SET last_seq = MAX(last_seq, excluded.last_seq)",
                (job, node, seq),
            )
        )

    # -- "job ended" notices the TUI has shown (so a restart does not repeat them) ---------------
    # Their tables are created on first write, not by SCHEMA: a state.db of any version gains them.

    def shown_endings(self) -> set[str]:
        with self._lock:
            try:
                return {r[0] for r in self._db.execute("SELECT job FROM shown_endings").fetchall()}
            except sqlite3.OperationalError:  # no such table yet: nothing shown yet
                return set()

    def mark_endings_shown(self, job_ids: list[str], t: float) -> None:
        self._write(
            (SHOWN_ENDINGS, ()),
            *(("INSERT OR IGNORE INTO shown_endings (job, shown_at) VALUES (?, ?)", (j, t)) for j in job_ids),
        )

    def swap_ui_start(self, t: float) -> float | None:
        """Record that the TUI starts at t; return when it started the time before (None: never)."""
        with self._lock:
            try:
                row = self._db.execute("SELECT t FROM ui_marks WHERE name = 'started'").fetchone()
            except sqlite3.OperationalError:
                row = None
        self._write((UI_MARKS, ()), ("INSERT OR REPLACE INTO ui_marks (name, t) VALUES ('started', ?)", (t,)))
        return float(row[0]) if row else None
