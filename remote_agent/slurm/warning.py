"""`gpudeck-agent slurm-warn JOB_ROOT SECONDS`: run by the batch script when Slurm's warning signal
(sbatch --signal=B:USR1@SECONDS) says the time limit is near. Every node's supervisor is asked to
stop through its control file, as a user's stop is: the trainer gets its stop signal and checkpoints
before Slurm's TIMEOUT would kill it."""

from __future__ import annotations

from pathlib import Path

from ..jobstate import TERMINAL_STATES, JobView
from ..spec import DEFAULT_GRACE
from ..supervision.control import write_control
from ..supervision.jobspec import load_spec
from .control import node_dirs

WARN_SIGNAL = "USR1"


def reason(seconds: int) -> str:
    return "Slurm time limit in %d s" % seconds


def warn_nodes(job_root: str, seconds: int) -> int:
    for directory in node_dirs(Path(job_root)):
        view = JobView(directory.parent.name, directory.name, directory)
        if view.refresh()["state"] in TERMINAL_STATES:
            continue
        try:
            grace = float(load_spec(view.files.spec).get("grace", DEFAULT_GRACE))
        except (OSError, ValueError):
            grace = DEFAULT_GRACE
        write_control(view.files.control, "stop", min(grace, max(seconds - 5.0, 0.0)), reason(seconds))
    return 0
