"""state.db is derived: when it was missing or corrupt (a fresh file), its job index is rebuilt
from what the hosts' agents report (their journals), so nothing the index held is lost for good."""

from __future__ import annotations

import time

from ..errors import GpudeckError
from ..store import JobRecord, Store
from .agents import Agents
from .find import list_jobs


def rebuild_index(agents: Agents, store: Store) -> int:
    """Record every job the reachable hosts hold that the index lacks; how many were added.
    A host that cannot answer is skipped silently: its jobs come back on the next fresh start."""
    skipped: list[GpudeckError] = []
    known = {record.id for record in store.list_jobs()}
    added = 0
    for job in list_jobs(agents, skipped):
        if job.id in known:
            continue
        first = job.first
        created = first.get("created_at") or first.get("started_at") or time.time()
        listed = first.get("argv")
        argv = listed if isinstance(listed, list) else []
        store.record_job(
            JobRecord(
                id=job.id,
                name=job.name,
                created_at=float(created),
                nodes=[{"host": str(n["host"]), "node": str(n["node"])} for n in job.nodes],
                argv=[str(a) for a in argv],
                restart_of=first.get("restart_of") if isinstance(first.get("restart_of"), str) else None,
            )
        )
        added += 1
    return added
