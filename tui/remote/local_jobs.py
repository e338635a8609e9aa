"""The local host's job listing, read in this process instead of through a `serve` subprocess.

`jobs` only reads the job directories (spec, journal, the summary cache), so for the local host
the client folds them itself with the agent's own code (remote_agent is standard library only):
`ps` no longer starts an interpreter for the agent, which was most of its time. The answer is
the object the agent's `jobs` op gives (Server.op_jobs → JobTable.list, from JobReader).
"""

from __future__ import annotations

from typing import Any

from .. import paths


def local_jobs() -> dict[str, Any]:
    """{"jobs": [...]} as the local agent would answer; OSError (unreadable dir) for the caller."""
    from remote_agent.serving.jobreader import JobReader  # here: only a local listing needs it
    from remote_agent.storage.files import ensure_private_dir

    root = paths.ensure_private(paths.local_agent_dir())
    ensure_private_dir(root / "jobs")
    return {"jobs": JobReader(root).list()}  # the read side only: no launcher, Slurm or GPU code
