"""serve's code ops (PROTOCOL.md): `code_have` (the one round trip of a sync that sends nothing)
and `code_gc`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, Iterable, Set

from .gc import DEFAULT_KEEP_DAYS, collect
from .manifest import is_sha
from .store import CodeStore


class CodeOpError(Exception):
    """A bad argument; the message is the answer."""


def code_have(root: Path, snapshot: Any) -> Dict[str, Any]:
    """Whether the snapshot is here (and whole); marks it used. Without one (null): whether the
    store holds no blob at all (`empty`: a client then pushes blobs as it hashes them)."""
    if snapshot is None:
        return {"snapshot": None, "have": False, "empty": CodeStore(root).is_empty()}
    if not is_sha(snapshot):
        raise CodeOpError("snapshot: expected 64 lowercase hex digits, got %r" % (snapshot,))
    return {"snapshot": snapshot, "have": CodeStore(root).has_snapshot(snapshot, touch=True)}


def code_gc(root: Path, keep_days: Any, jobs: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    keep = DEFAULT_KEEP_DAYS if keep_days is None else keep_days
    if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not math.isfinite(keep) or keep < 0:
        raise CodeOpError("keep_days: expected a number of days >= 0, got %r" % (keep_days,))
    return collect(root, float(keep), live_snapshots(jobs))


ENDED = ("exited", "failed", "stopped", "killed")


def live_snapshots(jobs: Iterable[Dict[str, Any]]) -> Set[str]:
    """The snapshots of every job not ended (a lost job's processes may still run from it)."""
    out = set()
    for job in jobs:
        code = job.get("code")
        if job.get("state") not in ENDED and isinstance(code, dict) and is_sha(code.get("snapshot")):
            out.add(code["snapshot"])
    return out
