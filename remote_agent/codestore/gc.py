"""Collecting the code store: snapshots not used in the last N days and not a live job's go, then
every blob no remaining snapshot names. Holds the store's lock exclusively, so no receive or
materialize is half done while it looks."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, Iterable, Set

from ..storage.files import dir_entries
from .manifest import ManifestError, is_sha, parse
from .store import CodeStore

DEFAULT_KEEP_DAYS = 7.0
MIN_AGE = 600.0  # a snapshot synced for a launch not sent yet is never collected


def collect(root: Path, keep_days: float, live: Iterable[str]) -> Dict[str, Any]:
    store = CodeStore(root)
    out: Dict[str, Any] = {
        "snapshots_removed": 0,
        "snapshots_kept": 0,
        "blobs_removed": 0,
        "bytes_freed": 0,
        "live": 0,
    }
    if not store.dir.is_dir():
        return out
    live_set: Set[str] = set(live)
    cutoff = time.time() - max(keep_days * 86400.0, MIN_AGE)
    with store.locked(exclusive=True):
        wanted: Set[str] = set()  # blob file names
        for entry in dir_entries(store.snapshots):
            sid = entry.name[: -len(".json")]
            if not (entry.name.endswith(".json") and is_sha(sid)):
                continue
            used = entry.stat().st_mtime
            if sid in live_set or used >= cutoff:
                out["snapshots_kept"] += 1
                out["live"] += sid in live_set
                try:
                    entries = parse(Path(entry.path).read_bytes())
                except (OSError, ManifestError):
                    continue
                wanted.update(e.sha + (".x" if e.exec else "") for e in entries if e.kind == "f")
                continue
            os.unlink(entry.path)
            out["snapshots_removed"] += 1
        for prefix in dir_entries(store.blobs):
            for blob in dir_entries(prefix.path):
                if blob.name not in wanted:
                    out["bytes_freed"] += blob.stat().st_size
                    os.unlink(blob.path)
                    out["blobs_removed"] += 1
        for tmp in dir_entries(store.tmp):  # a receive cut off mid-blob (none runs now: we hold the lock)
            os.unlink(tmp.path)
    return out
