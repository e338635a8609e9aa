"""Collecting environments (`gpudeck gc`): an `envs/<key>/` that no live job uses and none used in the
last N days goes, and so does a half-built one nobody is building.

Each removal holds the key's lock exclusively, taken without waiting: a key being built (its builder
holds the lock) is kept, and a job that reuses an environment takes the lock shared while it marks
the use (build.py), so it either marks it before we look (then it is kept) or finds it gone and
builds it again. The environment is renamed out of the way first, its ready marker with it, so no
job ever activates one half removed. Lock files stay: one that is unlinked while a job waits on it
would let two builders in."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Set

from ..storage.files import dir_entries, open_private
from .build import READY_NAME, USED_NAME, envs_root
from .key import KEY_LENGTH

MIN_AGE = 600.0  # never an environment built or used in the last 10 minutes
_TRASH = ".gc-"


def collect_envs(root: Path, keep_days: float, live: Iterable[str]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"removed": 0, "kept": 0, "live": 0, "building": 0, "bytes_freed": 0}
    envs = envs_root(root)
    live_keys: Set[str] = set(live)
    cutoff = time.time() - max(keep_days * 86400.0, MIN_AGE)
    for entry in dir_entries(envs):
        if entry.name.startswith(_TRASH) and entry.is_dir(follow_symlinks=False):
            out["bytes_freed"] += _remove(Path(entry.path))  # a collection that was cut off
            continue
        if not (entry.is_dir(follow_symlinks=False) and _is_key(entry.name)):
            continue
        key = entry.name
        if key in live_keys:
            out["kept"] += 1
            out["live"] += 1
            continue
        fd = _try_lock(envs / (key + ".lock"))
        if fd is None:
            out["kept"] += 1
            out["building"] += 1
            continue
        try:
            directory = Path(entry.path)
            ready = (directory / READY_NAME).is_file()
            if ready and last_used(directory) >= cutoff:
                out["kept"] += 1
                continue
            trash = envs / (_TRASH + key)
            os.rename(str(directory), str(trash))  # gone for every job at once, marker and all
        finally:
            os.close(fd)
        out["bytes_freed"] += _remove(trash)
        out["removed"] += 1
    return out


def last_used(directory: Path) -> float:
    """The latest of its build (the ready marker's time) and its last use by a job."""
    times = [0.0]
    for name in (READY_NAME, USED_NAME):
        try:
            times.append(os.stat(str(directory / name)).st_mtime)
        except OSError:
            pass
    return max(times)


def _is_key(name: str) -> bool:
    return len(name) == KEY_LENGTH and all(c in "0123456789abcdef" for c in name)


def _try_lock(path: Path) -> Optional[int]:
    """The key's lock, held exclusively; None when a job holds it (building, or marking a use)."""
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


def _remove(directory: Path) -> int:
    """Removes the tree; the bytes that were its own (files linked elsewhere too, e.g. from uv's
    cache, free nothing)."""
    freed = 0
    for base, _dirs, files in os.walk(str(directory)):
        for name in files:
            try:
                st = os.lstat(os.path.join(base, name))
            except OSError:
                continue
            if st.st_nlink == 1:
                freed += st.st_size
    shutil.rmtree(str(directory), ignore_errors=True)
    return freed
