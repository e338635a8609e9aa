"""`jobs` over many ended jobs: one cache file instead of three files per job and node.

An ended job's answer never changes (its journal ends with its terminal state; nothing is appended
after it), so the listing keeps the answers of jobs whose every node has ended, keyed by job id,
beside the job dirs (`jobs/listing.cache.json`). A cached job is used while its job dir's mtime is
the one recorded: adding or removing a node dir changes it, and `rm` removes the dir. Anything
else (a job still running, lost, or new) is folded from its files as before. The cache is derived:
unreadable or stale, it is rebuilt.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, List

from ..jobstate import TERMINAL_STATES, JobView
from ..names import is_job_id, is_node
from ..storage.files import write_private_atomic
from ..storage.jsonio import dumps
from ..storage.layout import jobs_root

CACHE_NAME = "listing.cache.json"
VERSION = 1
# The fold's field names: an agent whose JobView folds other fields (an upgrade) rebuilds the cache
# instead of answering with objects of the old shape.
FIELDS = sorted(JobView("", "0", Path(".")).fields)

Fold = Callable[[str, str], Dict[str, Any]]  # (job, node) → the job object, from its files


def list_jobs(root: Path, fold: Fold) -> List[Dict[str, Any]]:
    """Every (job, node)'s object, newest first: ended jobs from the cache, the rest folded."""
    base = jobs_root(root)
    cached = _load(base)
    fresh: Dict[str, Dict[str, Any]] = {}
    objects: List[Dict[str, Any]] = []
    try:
        entries = list(os.scandir(str(base)))
    except FileNotFoundError:
        return []
    for entry in entries:
        if not (is_job_id(entry.name) and entry.is_dir()):
            continue
        try:
            mtime = entry.stat().st_mtime_ns
        except FileNotFoundError:
            continue  # removed while we listed
        hit = cached.get(entry.name)
        if isinstance(hit, dict) and hit.get("mtime_ns") == mtime and isinstance(hit.get("nodes"), list):
            objects.extend(hit["nodes"])
            fresh[entry.name] = hit
            continue
        nodes = _fold_job(entry.path, entry.name, fold)
        objects.extend(nodes)
        # A Slurm job's end is cached once Slurm has recorded it too (slurm/states.py: `settled`).
        if nodes and all(
            n.get("state") in TERMINAL_STATES and (n.get("slurm") or {}).get("settled", True) for n in nodes
        ):
            fresh[entry.name] = {"mtime_ns": mtime, "nodes": nodes}
    if fresh.keys() != cached.keys() or any(fresh[k] is not cached.get(k) for k in fresh):
        _save(base, fresh)
    objects.sort(key=lambda o: o["id"], reverse=True)
    return objects


def list_some(root: Path, fold: Fold, ids: List[str]) -> List[Dict[str, Any]]:
    """Only these jobs' objects (a client that knows which jobs it means: `jobs` with `ids`), folded
    from their own dirs; the cache and every other job are left alone."""
    base = jobs_root(root)
    objects: List[Dict[str, Any]] = []
    for job in dict.fromkeys(ids):
        if is_job_id(job):
            objects.extend(_fold_job(str(base / job), job, fold))
    objects.sort(key=lambda o: o["id"], reverse=True)
    return objects


def _fold_job(path: str, job: str, fold: Fold) -> List[Dict[str, Any]]:
    nodes = []
    try:
        node_entries = list(os.scandir(path))
    except FileNotFoundError:
        return []
    for node_entry in node_entries:
        if is_node(node_entry.name) and node_entry.is_dir():
            try:
                nodes.append(fold(job, node_entry.name))
            except LookupError:
                continue  # removed while we listed
    return nodes


def _load(base: Path) -> Dict[str, Any]:
    try:
        with open(str(base / CACHE_NAME), "rb") as f:
            cached = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(cached, dict) or cached.get("version") != VERSION or cached.get("fields") != FIELDS:
        return {}
    jobs = cached.get("jobs")
    return jobs if isinstance(jobs, dict) else {}


def _save(base: Path, jobs: Dict[str, Any]) -> None:
    try:
        write_private_atomic(
            base / CACHE_NAME, dumps({"version": VERSION, "fields": FIELDS, "jobs": jobs}).encode("utf-8")
        )
    except OSError:
        pass  # a cache that cannot be written only costs time
