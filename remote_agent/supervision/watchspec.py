"""A watch job's spec: a log file of a run gpudeck did not start, and optionally the run's pid.

A watch job has `"watch": {"path", "pid", "pid_start", "from_end", "slurm_job"}` in place of a command
(`argv` is empty). Without a pid it is read-only: nothing of the run is ever signalled. With
one, stop/kill act on that process and its descendants, identified by the pid's start time so
a reused pid is never signalled.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Set

from ..spec_defaults import SpecError
from .proctree import descendants, is_live, signal_pids


def is_watch(spec: Any) -> bool:
    return isinstance(spec, dict) and isinstance(spec.get("watch"), dict)


def process_start(pid: int) -> Optional[int]:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # comm may hold spaces: fields follow the last ')'
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _from_home(path: str) -> str:
    path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(os.path.expanduser("~"), path))


def validate_watch_spec(raw: Any) -> Dict[str, Any]:
    """A clean copy, or SpecError naming the field. A relative path is taken from the home dir
    (where an SSH login starts); the pid must be a live process now."""
    if not is_watch(raw):
        raise SpecError("spec.watch: expected an object")
    from ..spec import JobSpec, Watch  # here: a supervisor that only asks is_watch keeps no dataclasses

    spec = JobSpec.from_wire(raw)
    watch = spec.watch
    assert watch is not None  # is_watch said so
    if spec.argv:
        raise SpecError("spec.argv: a watch runs no command")
    pid_start = None
    if watch.pid is not None:
        pid_start = process_start(watch.pid)
        if pid_start is None or not is_live(watch.pid):
            raise SpecError("spec.watch.pid: no live process %d on this host" % watch.pid)
    if spec.tensorboard is not None:  # from the home dir, like the path (not the path's dir)
        spec = spec.replace(tensorboard=_from_home(spec.tensorboard))
    if not watch.path:  # a TensorBoard LOGDIR alone (spec.tensorboard): no log file to check
        return spec.replace(
            workdir=os.path.expanduser("~"),
            env={},
            setup=(),
            watch=Watch("", watch.pid, pid_start, watch.from_end, watch.slurm_job),
        ).to_wire()
    path = _from_home(watch.path)
    if os.path.isdir(path):
        raise SpecError("spec.watch.path: a directory, not a log file: %s" % path)
    if os.path.exists(path) and not os.path.isfile(path):
        raise SpecError(
            "spec.watch.path: not a regular file (a pipe or a device cannot be re-read): %s" % path
        )
    if os.path.exists(path) and not os.access(path, os.R_OK):
        raise SpecError("spec.watch.path: not readable by the agent's user: %s" % path)
    return spec.replace(
        workdir=os.path.dirname(path),
        env={},
        setup=(),
        watch=Watch(path, watch.pid, pid_start, watch.from_end, watch.slurm_job),
    ).to_wire()


def watched_tree(spec: Any) -> Set[int]:
    """The watched run's live processes (its pid and descendants); empty without a pid, or when
    the pid now belongs to another process (its start time changed)."""
    if not is_watch(spec):
        return set()
    pid, start = spec["watch"].get("pid"), spec["watch"].get("pid_start")
    if not isinstance(pid, int) or process_start(pid) != start or not is_live(pid):
        return set()
    return {pid} | {p for p in descendants(pid) if is_live(p)}


def signal_watched(spec: Any, sig: int) -> None:
    """The run's main process only (it forwards, like a job's command)."""
    tree = watched_tree(spec)
    pid = spec["watch"]["pid"] if tree else None
    if pid in tree:
        signal_pids([pid], sig)


def refuse_read_only(spec: Any, action: str) -> Optional[str]:
    """Why `action` is refused on this job, or None. A watch without a pid is read-only: kill
    would have nothing to kill; stop ends the watch (never the run)."""
    if is_watch(spec) and spec["watch"].get("pid") is None and action == "kill":
        return (
            "job %s watches %s read-only (no --pid): nothing to kill; `stop` ends the watch, "
            "never the run" % (spec.get("id"), spec["watch"].get("path"))
        )
    return None
