"""`jobs`, `stop` and `kill` for a job whose directory was deleted while it ran (supervision/deleted.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..jobstate import JobView
from ..names import is_job_id, is_node
from ..storage.layout import job_dir
from ..supervision.deleted import CAUSE, DeletedJob, deleted_jobs, end_deleted_job

SCAN_EVERY = 5.0  # s: a /proc pass costs ~70 µs a process; a TUI polling `jobs` pays it this often
_scans: Dict[str, Tuple[float, List[Dict[str, Any]]]] = {}


def deleted_objects(root: Path) -> List[Dict[str, Any]]:
    """A job object for each (job, node) whose processes run on without a directory: `lost`, as
    nothing journals it, with its cause saying why; stop and kill still end it."""
    now = time.monotonic()
    last = _scans.get(str(root))
    if last is not None and now - last[0] < SCAN_EVERY:
        return [dict(obj) for obj in last[1]]
    try:
        found = deleted_jobs(root)
    except OSError:
        return []
    objects = [_object(root, job) for job in sorted(found.values(), key=lambda j: (j.job, j.node))]
    _scans[str(root)] = (now, objects)
    return [dict(obj) for obj in objects]


def _object(root: Path, job: DeletedJob) -> Dict[str, Any]:
    obj = JobView(job.job, job.node, job_dir(root, job.job, job.node)).as_object()
    alive = len(job.pids) + len(job.supervisors)
    obj.update(
        state="lost",
        name=job.name,
        pid=min(job.pids) if job.pids else None,
        supervisor_pid=min(job.supervisors) if job.supervisors else None,
        cause="%s; %d process%s of it still run%s (stop or kill ends them)"
        % (CAUSE, alive, "es" if alive != 1 else "", "" if alive != 1 else "s"),
    )
    return obj


def end_deleted(
    root: Path, job: Any, node: Any, action: str, grace: Optional[float], reason: Any
) -> Optional[Dict[str, Any]]:
    """The answer to stop/kill of a deleted job once none of its processes is left; None: no such job."""
    node = "0" if node is None else node
    if not (is_job_id(job) and is_node(node)):
        return None
    ok = isinstance(grace, (int, float)) and not isinstance(grace, bool) and 0 <= grace < float("inf")
    from ..spec import DEFAULT_GRACE  # here: a listing (every `ps`) must not load the typed spec

    wait = float(grace) if ok and grace is not None else DEFAULT_GRACE  # (no spec is left to give its own)
    state = end_deleted_job(root, job, node, action, wait)
    if state is None:
        return None
    obj = JobView(job, node, job_dir(root, job, node)).as_object()
    obj.update(state=state, reason=reason or "user", cause=CAUSE)
    return obj
