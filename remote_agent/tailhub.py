"""Streams journal records to the client: one thread polls every subscribed journal in turn.

Each round reads at most a bounded slice per journal, so a huge or fast job never starves the others.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Dict, Tuple

from .journal import JournalReader
from .output import LineWriter

POLL_SECONDS = 0.05
SLICE_BYTES = 256 * 1024
MAX_BATCH = 2000


class _Subscription:
    def __init__(self, path: Path, since_seq: int) -> None:
        self.reader = JournalReader(path)
        self.since_seq = since_seq


class TailHub:
    def __init__(self, out: LineWriter) -> None:
        self._out = out
        self._subs: Dict[Tuple[str, str], _Subscription] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tailhub", daemon=True)
        self._thread.start()

    def subscribe(self, job: str, node: str, journal: Path, since_seq: int) -> None:
        with self._lock:
            self._subs[(job, node)] = _Subscription(journal, since_seq)
        self._wake.set()

    def unsubscribe(self, job: str, node: str) -> bool:
        with self._lock:
            return self._subs.pop((job, node), None) is not None

    def close(self) -> None:
        self._stopped.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            busy = False
            with self._lock:
                subs = list(self._subs.items())
            for key, sub in subs:
                records = [r for r in sub.reader.read_new(SLICE_BYTES) if r["seq"] > sub.since_seq]
                if not records:
                    continue
                busy = True
                with self._lock:
                    if self._subs.get(key) is not sub:
                        continue  # untailed (or re-tailed) meanwhile: the old reader must not push
                for start in range(0, len(records), MAX_BATCH):
                    batch = records[start : start + MAX_BATCH]
                    self._out.send({"push": "events", "job": key[0], "node": key[1], "events": batch})
                sub.since_seq = records[-1]["seq"]
            if not busy:
                self._wake.wait(POLL_SECONDS)
                self._wake.clear()
