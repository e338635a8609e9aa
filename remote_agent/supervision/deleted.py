"""Jobs whose directory was deleted while they ran: found by their processes, and ended.

Every process of a job's tree carries its node's directory in its environment (JOB_DIR_VAR, set
by the supervisor beside the job key), and the supervisor has it on its command line. With the
directory gone nothing is journaled any more, but the processes still say which job they are of:
`jobs` lists such a job (`lost`, its cause saying why) and stop/kill end it like any other.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ..names import is_job_id, is_node
from ..storage.layout import jobs_root
from .control import KILL_SIGNAL
from .proctree import is_live, parent_map, signal_pids

JOB_DIR_VAR = "GPUDECK_JOB_DIR"
CAUSE = "its directory was deleted while it ran: nothing of it is journaled"


class DeletedJob:
    """The live processes of one (job, node) whose directory is gone."""

    def __init__(self, job: str, node: str) -> None:
        self.job, self.node = job, node
        self.pids: Set[int] = set()  # the command's tree
        self.supervisors: Set[int] = set()
        self.name: Optional[str] = None


def deleted_jobs(root: Path) -> Dict[Tuple[str, str], DeletedJob]:
    """One pass over /proc: every (job, node) of this agent dir with live processes and no directory."""
    base = str(jobs_root(root)) + "/"
    env_prefix = ("%s=%s" % (JOB_DIR_VAR, base)).encode()
    found: Dict[Tuple[str, str], DeletedJob] = {}
    missing: Dict[str, bool] = {}

    def entry(path: str) -> Optional[DeletedJob]:
        parts = path[len(base) :].split("/")
        if len(parts) != 2 or not is_job_id(parts[0]) or not is_node(parts[1]):
            return None
        if path not in missing:
            missing[path] = not os.path.isdir(path)
        if not missing[path]:
            return None
        return found.setdefault((parts[0], parts[1]), DeletedJob(parts[0], parts[1]))

    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        pid = int(name)
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmdline = f.read().split(b"\0")
            with open("/proc/%d/environ" % pid, "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if b"run" in cmdline[1:-1]:  # `… run JOB_DIR …`: maybe a supervisor of a job of this agent dir
            arg = cmdline[cmdline.index(b"run", 1) + 1].decode("utf-8", "replace")
            job = entry(arg) if arg.startswith(base) else None
            if job is not None and is_live(pid):
                job.supervisors.add(pid)
        for var in environ:
            if var.startswith(env_prefix):
                job = entry(var[len(JOB_DIR_VAR) + 1 :].decode("utf-8", "replace"))
                if job is not None and is_live(pid):
                    job.pids.add(pid)
                    names = [v for v in environ if v.startswith(b"GPUDECK_JOB_NAME=")]
                    job.name = names[0].split(b"=", 1)[1].decode("utf-8", "replace") if names else None
    return found


def end_deleted_job(root: Path, job: str, node: str, action: str, grace: float) -> Optional[str]:
    """Stops or kills a deleted job's processes (None: no such job runs). A live supervisor is asked
    first, as any stop is (it sends the stop signal, waits the grace, kills the rest); what is left
    after that is killed here. Returns the state it ended in."""
    jobs = deleted_jobs(root)
    key = (job, node)
    if key not in jobs:
        return None
    found = jobs[key]
    if action == "kill":
        signal_pids(found.pids, signal.SIGKILL)
        signal_pids(found.supervisors, KILL_SIGNAL)
    elif found.supervisors:
        signal_pids(found.supervisors, signal.SIGTERM)  # its own graceful stop
    else:
        signal_pids(_roots(found.pids), signal.SIGTERM)  # the command, not its workers (a group-wide
        # SIGTERM kills DataLoader workers before the trainer can checkpoint)
    deadline = time.monotonic() + (grace if action == "stop" else 0.0) + 5.0
    while time.monotonic() < deadline and _left(root, key):
        time.sleep(0.05)
    for _ in range(100):  # whatever is left: SIGKILL, again for late forks, until none is
        left = _left(root, key)
        if not left:
            break
        signal_pids(left, signal.SIGKILL)
        time.sleep(0.02)
    return "killed" if action == "kill" else "stopped"


def _left(root: Path, key: Tuple[str, str]) -> List[int]:
    found = deleted_jobs(root).get(key)
    return sorted(found.pids | found.supervisors) if found else []


def _roots(pids: Set[int]) -> List[int]:
    parents = parent_map()
    return [pid for pid in pids if parents.get(pid) not in pids]
