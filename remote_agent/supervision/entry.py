"""`gpudeck-agent run JOB_DIR`: which kind of supervisor a job gets (a command's, an adopter of a
lost one, a watch of a log file), chosen here so that no kind imports another to choose. Each kind
is imported only when chosen: a command's supervisor stays up for its job's life, and the other
kinds' modules (the job state an adopter rebuilds, a watch's Slurm look) would stay loaded in each
of a host's supervisors (issue 33)."""

from __future__ import annotations

import errno
from typing import Optional

from ..storage.layout import JobFiles
from .jobspec import load_spec
from .watchspec import is_watch


def run_job_dir(job_dir: str, adopt: Optional[str] = None) -> int:
    """Supervise the job in job_dir: launch its command, or (`adopt`: why) take over a lost one."""
    files = JobFiles(job_dir)
    try:
        spec = load_spec(files.spec)
    except (OSError, ValueError) as exc:
        print("gpudeck-agent run: %s: %s" % (files.spec, exc))
        return 2
    try:
        if adopt is not None:
            from .adopter import AdoptingSupervisor

            return AdoptingSupervisor(files, spec, adopt).run()
        if is_watch(spec):  # a log file of a run we did not start, in place of a command
            from .watchjob import WatchSupervisor

            return WatchSupervisor(files, spec).run()
        from .supervisor import Supervisor

        return Supervisor(files, spec).run()
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            print("gpudeck-agent run: disk full: %s" % exc)
        raise
