"""The processes of a job: found through /proc, signalled, waited for until none is left."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from typing import Dict, Iterable, List, Optional, Set

PR_SET_CHILD_SUBREAPER = 36
JOB_MARKER_VAR = "GPUDECK_JOB_KEY"
SUPERVISOR_MARKER_VAR = "GPUDECK_SUPERVISOR_OF"  # set on every supervisor (launcher.supervisor_env)


def set_child_subreaper() -> bool:
    """Orphans of the job (torchrun workers start their own sessions) reparent to us, not to init."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc: int = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        return rc == 0
    except (OSError, AttributeError):
        return False


def _stat_fields(pid: int) -> Optional[List[bytes]]:
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    # comm may hold spaces or parentheses: the state follows the last ')'.
    close = data.rfind(b")")
    return data[close + 2 :].split()


def process_state(pid: int) -> Optional[str]:
    """One-letter state ('R', 'S', 'Z'…), or None when the process is gone."""
    fields = _stat_fields(pid)
    return fields[0].decode() if fields else None


def is_live(pid: int) -> bool:
    state = process_state(pid)
    return state is not None and state not in ("Z", "X")


def _all_pids() -> Iterable[int]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def parent_map() -> Dict[int, int]:
    parents = {}
    for pid in _all_pids():
        fields = _stat_fields(pid)
        if fields:
            parents[pid] = int(fields[1])
    return parents


def descendants(root: int, own_key: Optional[str] = None) -> Set[int]:
    """The processes under `root`. With `own_key`, a subtree that belongs to another job is left out:
    a supervisor of another job (a gpudeck job launched from inside this one reparents to this
    supervisor, the nearest subreaper) or a process carrying another job's key."""
    parents = parent_map()
    children: Dict[int, List[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: Set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found and not (own_key is not None and _of_another_job(child, own_key)):
                found.add(child)
                stack.append(child)
    return found


def _of_another_job(pid: int, own_key: str) -> bool:
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return False
    mine = ("%s=%s" % (JOB_MARKER_VAR, own_key)).encode()
    for entry in env:
        if entry.startswith(SUPERVISOR_MARKER_VAR.encode() + b"="):
            return True
        if entry.startswith(JOB_MARKER_VAR.encode() + b"=") and entry != mine:
            return True
    return False


def marked_processes(job_key: str) -> Set[int]:
    """Processes whose environment carries the job's marker: the tree even when its supervisor is gone."""
    needle = ("%s=%s" % (JOB_MARKER_VAR, job_key)).encode()
    found = set()
    for pid in _all_pids():
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.add(pid)
    return found


def job_tree(job_key: str, supervisor_pid: Optional[int]) -> Set[int]:
    """Live, non-zombie processes of the job, never including the supervisor itself."""
    pids = marked_processes(job_key)
    if supervisor_pid:
        pids |= descendants(supervisor_pid, job_key)
    pids.discard(os.getpid())
    if supervisor_pid:
        pids.discard(supervisor_pid)
    return {pid for pid in pids if is_live(pid)}


def signal_pids(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_tree_until_gone(job_key: str, supervisor_pid: Optional[int], timeout: float = 10.0) -> bool:
    """SIGKILL every process of the tree, again for late forks, until none is left."""
    deadline = time.monotonic() + timeout
    while True:
        pids = job_tree(job_key, supervisor_pid)
        if not pids:
            return True
        if time.monotonic() > deadline:
            return False
        signal_pids(pids, signal.SIGKILL)
        time.sleep(0.02)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "SIG%d" % number
