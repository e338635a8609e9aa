"""Who a process on a GPU is, in the words of a refusal: `job ID node N` when it belongs to a
gpudeck job (its environment carries the job's key; readable for the user's own processes), else
`pid N (user)`. Standard library only (the agent's rule)."""

from __future__ import annotations

from typing import Any, Optional

from ..supervision.proctree import JOB_MARKER_VAR


def job_key_of(pid: int) -> Optional[str]:
    """The gpudeck job key (`ID/NODE`) in a process's environment; None: not a job's, or unreadable."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return None
    prefix = (JOB_MARKER_VAR + "=").encode()
    for entry in entries:
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode("utf-8", "replace")
    return None


def foreign_user(pid: int, user: Any) -> str:
    key = job_key_of(pid)
    if key and "/" in key:
        job, node = key.split("/", 1)
        return "job %s node %s (pid %d)" % (job, node, pid)
    return "pid %d (%s)" % (pid, user if isinstance(user, str) and user else "another user")
