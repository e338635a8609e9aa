"""Starts a job's supervisor fully detached from whoever asked (serve, and so SSH or the CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

import remote_agent

from ..storage.files import open_private
from .deleted import JOB_DIR_VAR
from .proctree import JOB_MARKER_VAR, SUPERVISOR_MARKER_VAR


def self_command() -> List[str]:
    """argv that runs this same agent: the zipapp it was loaded from, or the package on disk."""
    loader = getattr(remote_agent, "__loader__", None)
    archive = getattr(loader, "archive", None)
    if archive:
        return [sys.executable, archive]
    package_parent = str(Path(remote_agent.__file__).resolve().parent.parent)
    boot = (
        "import sys; sys.path.insert(0, %r); from remote_agent.__main__ import main; main()" % package_parent
    )
    return [sys.executable, "-c", boot]


def supervisor_env(job_dir: Path, base: Mapping[str, str]) -> Dict[str, str]:
    """A supervisor's environment: never the job key of a job it was launched from (a gpudeck job
    started inside a gpudeck job is a job of its own, not a process of the outer one), and a mark
    saying whose supervisor it is, so the outer job's tree walk stops there (proctree.job_tree)."""
    # nor the job dir of one (deleted.py finds a deleted job's processes by it)
    env = {k: v for k, v in base.items() if k not in (JOB_MARKER_VAR, JOB_DIR_VAR)}
    env[SUPERVISOR_MARKER_VAR] = "%s/%s" % (job_dir.parent.name, job_dir.name)
    return env


def spawn_detached(
    argv: List[str],
    log_path: Path,
    name: str,
    env: Optional[Mapping[str, str]] = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """A process of the agent's own that outlives the one starting it: a new session, no inherited
    stdio (the launching pipe sees EOF at once), its output appended to `log_path`, reaped by a
    thread while we still run so it never lingers as our zombie. `pass_fds`: descriptors it keeps
    (a lock it goes on holding: keeper.py)."""
    log_fd = open_private(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            close_fds=True,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
            cwd="/",
            env=None if env is None else dict(env),
        )
    finally:
        os.close(log_fd)
    threading.Thread(target=proc.wait, name="reap-%s-%d" % (name, proc.pid), daemon=True).start()
    return proc


def spawn_supervisor(job_dir: Path, log_path: Path, adopt: Optional[str] = None) -> int:
    argv = self_command() + ["run", str(job_dir)] + (["--adopt=" + adopt] if adopt is not None else [])
    return spawn_detached(argv, log_path, "supervisor", supervisor_env(job_dir, os.environ)).pid
