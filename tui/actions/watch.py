"""Watching a run gpudeck did not start (tmux, nohup, a scheduler): its log file becomes a read-only
job, streamed, parsed, journaled and charted like any other. One path for `gpudeck watch` and the TUI.

Read-only means nothing of the run is ever signalled: `stop` ends the watch, `kill`, `restart` and
`scale` are refused. With a pid (`--pid`), stop and kill act on that process and its descendants.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from remote_agent.names import new_job_id
from remote_agent.spec import DEFAULT_GRACE, PID_MAX

from ..errors import GpudeckError
from ..fleet.watch import WatchInfo
from ..hosts_file import LOCAL
from ..store import JobRecord, Store
from .agents import Agents
from .launch import LAUNCH_TIMEOUT, Launched
from .options import check_grace, check_name, default_name, usage


@dataclass(frozen=True)
class WatchOptions:
    path: str
    host: str = LOCAL
    name: str | None = None  # None: from the file's name
    pid: int | None = None  # the run's process: stop/kill act on its tree; None: read-only
    from_end: bool = False  # skip what the file holds now (a huge log)
    grace: float = DEFAULT_GRACE
    slurm_job: str | None = None  # a Slurm job's output (path resolved by the login node's agent)
    tensorboard: str | None = None  # a LOGDIR whose event files' scalars are points too (with PATH or alone)


def check_watch(opts: WatchOptions) -> WatchOptions:
    if opts.tensorboard is not None and (not opts.tensorboard or "\0" in opts.tensorboard):
        raise usage("--tensorboard: expected a directory (the run's LOGDIR)")
    if (not opts.path and opts.tensorboard is None) or "\0" in (opts.path or ""):
        raise usage(
            "watch: give the log file to follow or --tensorboard LOGDIR (gpudeck watch [--host H] PATH)"
        )
    check_name(opts.name)
    if opts.pid is not None and not 1 < opts.pid <= PID_MAX:
        raise usage(f"--pid {opts.pid}: expected the run's process id (2 to {PID_MAX})")
    check_grace(opts.grace)
    return opts


def watch_spec(opts: WatchOptions, job_id: str) -> dict[str, Any]:
    """The agent's launch spec for a watch: `watch` in place of a command. A local relative path is
    taken from the current dir; on an SSH host from the login dir (the agent resolves it)."""
    local = opts.host == LOCAL
    path = os.path.abspath(os.path.expanduser(opts.path)) if local and opts.path else opts.path or ""
    logdir = opts.tensorboard
    if logdir is not None and local:
        logdir = os.path.abspath(os.path.expanduser(logdir))
    named = path or (logdir or "").rstrip("/")
    name = opts.name or default_name([os.path.basename(named.rstrip("/")) or "watch"], job_id)
    return {
        "id": job_id,
        "name": name,
        "node": "0",
        "argv": [],
        "workdir": os.path.dirname(path) or "~",
        "watch": {
            "path": path,
            "pid": opts.pid,
            "from_end": opts.from_end,
            **({"slurm_job": opts.slurm_job} if opts.slurm_job else {}),
        },
        "grace": opts.grace,
        "created_at": time.time(),
        **({"tensorboard": logdir} if logdir is not None else {}),
    }


def watch(agents: Agents, store: Store | None, opts: WatchOptions, job_id: str | None = None) -> Launched:
    """Start watching; blocks until the agent answers (call from a worker)."""
    check_watch(opts)
    job_id = job_id or new_job_id()
    spec = watch_spec(opts, job_id)
    obj = agents.request(opts.host, "launch", timeout=LAUNCH_TIMEOUT, spec=spec)
    if store is not None:
        store.record_job(
            JobRecord(
                id=job_id,
                name=spec["name"],
                created_at=spec["created_at"],
                nodes=[{"host": opts.host, "node": "0"}],
                argv=[],
            )
        )
    state = obj.get("state", "starting") if isinstance(obj, dict) else "starting"
    return Launched(job_id, spec["name"], opts.host, state, (opts.host,))


def refuse_on_watch(watch_info: WatchInfo | None, action: str, job: str) -> None:
    """The core's refusals (the agent refuses too): restart and scale never apply to a watch;
    kill needs a pid."""
    if watch_info is None:
        return
    if action in ("restart", "scale"):
        raise GpudeckError(
            f"job {job} watches {watch_info.path}: {action} is not offered for a watched run "
            "(gpudeck did not start it)"
        )
    if action == "kill" and watch_info.read_only:
        raise GpudeckError(
            f"job {job} watches {watch_info.path} read-only (no --pid): nothing to kill; "
            "`gpudeck stop` ends the watch, never the run"
        )
