"""Job nodes that no ordinary rule reaches (issue 29): a node whose launch was cut before its
supervisor started, and a supervisor reached by another path of the same agent dir."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List, Optional

from ..jobstate import TERMINAL_STATES, JobView
from ..supervision.orphan import record_failed_start
from ..supervision.proctree import job_tree


def launch_interrupted(view: JobView, key: Optional[str], launch_wait: float) -> bool:
    """A node whose launch was cut between its spec and its supervisor (the client, or the serve
    process, killed mid-launch: an interrupted 1,000-node launch left such nodes `starting` forever,
    and `rm` refused them). Past the launch's own wait, with no record, no supervisor and no process
    of its tree, its failed start is journaled for it (under the journal's lock: a supervisor that
    holds it after all keeps the job)."""
    if view.refresh()["state"] != "starting" or view.fields["last_seq"] or view.fields["supervisor_pid"]:
        return False
    try:
        age = time.time() - os.stat(str(view.files.spec)).st_mtime
    except OSError:
        return False
    if age < launch_wait or (key and job_tree(key, None)):
        return False
    record_failed_start(view.files, "never started: its launch was interrupted")
    return view.refresh()["state"] in TERMINAL_STATES


def runs_dir(pid: int, cmdline: List[bytes], directory: Path) -> bool:
    """Whether `pid` is `run DIR` of this very directory, reached by another path (a second mount
    or a symlink of the same home): the file's identity, not its spelling, says so."""
    for i in range(len(cmdline) - 1):
        if cmdline[i] != b"run":
            continue
        arg = os.fsdecode(cmdline[i + 1])
        try:
            if not os.path.isabs(arg):
                arg = os.path.join(os.readlink("/proc/%d/cwd" % pid), arg)
            return os.path.samefile(arg, str(directory))
        except (OSError, ValueError):
            return False
    return False
