"""How many jobs run on this host now: their supervisors hold their locks. What a launch's share
needs on a host without GPUs (`live_jobs` op), without the full listing (every journal read) that
`jobs` answers (issue 33). Standard library only."""

from __future__ import annotations

from pathlib import Path

from ..storage.layout import iter_job_dirs
from .joblock import supervisor_alive


def live_jobs(agent_dir: Path) -> int:
    """The node dirs whose supervisor holds its lock (an unreadable one counts as none)."""
    count = 0
    try:
        dirs = [d for _, _, d in iter_job_dirs(agent_dir)]
    except OSError:
        return 0
    for d in dirs:
        try:
            count += supervisor_alive(d / "lock")
        except OSError:
            continue
    return count
