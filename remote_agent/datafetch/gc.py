"""Collecting the data cache (`gpudeck gc`): trees no live job's PATH links to and not used in the last
N days go, then every object no remaining tree holds and no live job lists.

A live job's trees are known from its spec (a tree's name is its listing's hash), so no job's PATH is
read. A tree is renamed out of the way before it is removed and its time looked at again after: a
job that used it meanwhile (fetch.py touches it) gets it back; one that finds it gone builds it anew.
An object is held by a tree when it has another link than its own name; the objects a live job lists
are kept even before its tree is made (it may be fetching them now), and so is anything written in
the last 10 minutes (a job launched after we listed the jobs)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, Iterable, Set, Tuple

from ..spec import DataSource
from ..storage.files import dir_entries
from .cache import BadKey, data_root, object_name, tree_files, tree_name

MIN_AGE = 600.0
_TRASH = ".gc-"


def live_data(sources: Iterable[DataSource]) -> Tuple[Set[str], Set[str]]:
    """(tree names, object names) of live jobs' copied sources."""
    trees: Set[str] = set()
    objects: Set[str] = set()
    for source in sources:
        if source.mode != "copy":
            continue
        try:
            files = tree_files(source)
        except BadKey:
            continue  # such a job failed before making a tree
        trees.add(tree_name(files))
        objects.update(object_name(o) for _, o in files)
    return trees, objects


def collect_data(root: Path, keep_days: float, live: Iterable[DataSource]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "trees_removed": 0,
        "trees_kept": 0,
        "live": 0,
        "objects_removed": 0,
        "objects_kept": 0,
        "bytes_freed": 0,
    }
    live_trees, live_objects = live_data(live)
    cutoff = time.time() - max(keep_days * 86400.0, MIN_AGE)
    trees = data_root(root) / "trees"
    for entry in dir_entries(trees):
        if not entry.is_dir(follow_symlinks=False):
            continue
        if entry.name.startswith(_TRASH):  # a collection cut off
            shutil.rmtree(entry.path, ignore_errors=True)
            continue
        if entry.name.startswith("."):  # a tree being made (`.NAME.tmp.PID`)
            continue
        if entry.name in live_trees or entry.stat(follow_symlinks=False).st_mtime >= cutoff:
            out["trees_kept"] += 1
            out["live"] += entry.name in live_trees
            continue
        trash = trees / (_TRASH + entry.name)
        os.rename(entry.path, str(trash))
        if os.stat(str(trash)).st_mtime >= cutoff:  # used just before the rename: it stays
            os.rename(str(trash), entry.path)
            out["trees_kept"] += 1
            continue
        shutil.rmtree(str(trash), ignore_errors=True)
        out["trees_removed"] += 1
    for entry in dir_entries(data_root(root) / "objects"):
        name = entry.name[: -len(".part")] if entry.name.endswith(".part") else entry.name
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_nlink > 1 or name in live_objects or st.st_mtime >= cutoff:
            out["objects_kept"] += 1
            continue
        try:
            os.unlink(entry.path)
        except OSError:
            continue
        out["objects_removed"] += 1
        out["bytes_freed"] += st.st_size
    return out
