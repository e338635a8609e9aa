"""Nothing of a job is left in the runtime: its container is removed after every end (stop, kill,
crash, a lost supervisor's adopter, the agent's own end of an orphan) and by `rm` of the job.
`--rm` removes it on a clean end; this covers the ends where the client or conmon was killed."""

from __future__ import annotations

import subprocess
from typing import Any, Mapping, Optional

from ..spec import JobSpec
from .command import container_name

REMOVE_TIMEOUT = 60.0


def remove_job_container(spec: Any) -> Optional[str]:
    """Force-remove the node's container if it exists; None when done, else why not (one line)."""
    typed = JobSpec.read(spec) if isinstance(spec, Mapping) else spec
    if typed is None or typed.runtime is None or typed.runtime.runtime == "auto":
        return None
    runtime = typed.runtime.runtime
    # The job's processes are gone by now (or a kill is meant): no grace to wait out.
    options = ["--ignore", "--force", "--time", "0"] if runtime == "podman" else ["--force"]
    argv = [runtime, "rm"] + options + [container_name(typed)]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=REMOVE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "could not remove container %s: %s" % (container_name(typed), exc)
    err = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0 and "No such container" not in err:
        return "could not remove container %s: %s" % (
            container_name(typed),
            err.splitlines()[-1] if err else done.returncode,
        )
    return None
