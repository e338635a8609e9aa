"""Nothing of a job is left in the runtime: its container is removed after every end (stop, kill,
crash, a lost supervisor's adopter, the agent's own end of an orphan) and by `rm` of the job.
`--rm` removes it on a clean end; this covers the ends where the client or conmon was killed."""

from __future__ import annotations

import subprocess
import time
from typing import Any, Mapping, Optional

from ..spec import JobSpec
from .command import container_name

REMOVE_TIMEOUT = 60.0
ATTEMPTS = 10


def remove_job_container(spec: Any) -> Optional[str]:
    """Force-remove the node's container if it exists; None when done, else why not (one line)."""
    typed = JobSpec.read(spec) if isinstance(spec, Mapping) else spec
    if typed is None or typed.runtime is None or typed.runtime.runtime == "auto":
        return None
    runtime = typed.runtime.runtime
    # The job's processes are gone by now (or a kill is meant): no grace to wait out.
    options = ["--ignore", "--force", "--time", "0"] if runtime == "podman" else ["--force"]
    argv = [runtime, "rm"] + options + [container_name(typed)]
    for attempt in range(ATTEMPTS):
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=REMOVE_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return "could not remove container %s: %s" % (container_name(typed), exc)
        err = done.stderr.decode("utf-8", "replace").strip()
        if done.returncode == 0 or "No such container" in err:
            return None
        # A kill's SIGKILL sweep of the job's tree (serve's, while it runs) takes our own child for
        # one of the job's: once the tree is empty the sweep ends and the next try is left alone.
        # A removal killed half way leaves the container `Stopping`; the next one finishes it.
        time.sleep(0.05 * (attempt + 1))
    last = err.splitlines()[-1] if err else "exit status %d" % done.returncode
    return "could not remove container %s: %s" % (container_name(typed), last)
