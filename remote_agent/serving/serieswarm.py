"""Folding jobs' series ahead of time, so a `series` request answers at once.

The first fold of a million-point journal takes most of a second of CPU (seconds on a busy host);
a user opening an old job should not wait for it. A client that shows jobs (the TUI) asks `jobs` with `warm_series`: after the
answer, one background thread folds every job's series into its cache (seriesfold.py). An ended
job's journal no longer changes, so it is folded once; a running one at most every RUNNING_EVERY
seconds, so the cache is never far behind; a journal under WARM_FROM bytes is left to the request.
The CLI does not ask: a `ps` must not pay for it.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Dict, Tuple

from ..storage.layout import iter_job_dirs
from .seriesfold import folded

RUNNING_EVERY = 30.0  # seconds between two folds of a journal that still grows
WARM_FROM = 256 << 10  # smaller journals fold in milliseconds on request: no cache file for them


class SeriesWarmer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._seen: Dict[str, Tuple[int, float]] = {}  # dir -> (journal size folded, when)
        self._thread: threading.Thread = threading.Thread()
        self._lock = threading.Lock()
        self.folds = 0  # journals folded (tests and benches read it)

    def kick(self) -> None:
        """Start a pass unless one runs (a pass that is due waits for the next kick)."""
        with self._lock:
            if self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._pass, name="series-warm", daemon=True)
            self._thread.start()

    def wait(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _pass(self) -> None:
        now = time.time()
        for _job, _node, directory in iter_job_dirs(self.root):
            key = str(directory)
            try:
                size = os.stat(str(directory / "events.jsonl")).st_size
            except OSError:
                continue
            done = self._seen.get(key)
            if size < WARM_FROM or (done is not None and (done[0] == size or now - done[1] < RUNNING_EVERY)):
                continue
            try:
                folded(directory)
            except Exception:  # a vanished or unreadable job: the next pass tries again
                continue
            self._seen[key] = (size, time.time())
            self.folds += 1
