"""serve's start-up sweep: every lost job of this agent dir is adopted or has its end journaled.

Skipped while the host's keeper runs: it watches every supervisor already (a pidfd each), and a sweep at each
serve's start (each CLI command on the host) would read every job's lock and journal again, so a
command on a host with 200 jobs would pay for all 200 (issue 33: launch and stop independent of the
number of jobs)."""

from __future__ import annotations

from pathlib import Path

from ..jobstate import JobView, supervisor_alive
from ..storage.layout import iter_job_dirs
from ..supervision.adoption import adopt_if_lost
from ..supervision.keeperstart import keeper_running


def adopt_lost_jobs(root: Path) -> int:
    """How many lost jobs it acted on. Never raises: a sweep that fails costs only its own work."""
    acted = 0
    if keeper_running(root):
        return 0
    try:
        for job, node, directory in iter_job_dirs(root):
            try:
                # A view of our own (the op threads refresh theirs); the summary cache keeps it cheap.
                view = JobView(job, node, directory)
                if supervisor_alive(view.files.lock) or view.refresh()["state"] != "lost":
                    continue
                if adopt_if_lost(view.files, "serve at start"):
                    acted += 1
            except (OSError, ValueError):
                continue  # removed while we looked, or unreadable: the next sweep tries again
    except OSError:
        pass
    return acted
