"""The processes of a job: found through /proc, signalled, waited for until none is left."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Callable, Dict, Iterable, List, Optional, Set

PR_SET_CHILD_SUBREAPER = 36
JOB_MARKER_VAR = "GPUDECK_JOB_KEY"
SUPERVISOR_MARKER_VAR = "GPUDECK_SUPERVISOR_OF"  # set on every supervisor (launcher.supervisor_env)


def set_child_subreaper() -> bool:
    """Orphans of the job (torchrun workers start their own sessions) reparent to us, not to init."""
    import ctypes  # here: an idle supervisor need not keep ctypes loaded (issue 33)

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc: int = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        return rc == 0
    except (OSError, AttributeError):
        return False


def stat_fields(pid: int) -> Optional[List[bytes]]:
    """/proc/PID/stat's fields from the state on (state, ppid, ...); None: no such process."""
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
    fields = stat_fields(pid)
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
        fields = stat_fields(pid)
        if fields:
            parents[pid] = int(fields[1])
    return parents


def descendants(root: int, own_key: Optional[str] = None) -> Set[int]:
    """The processes under `root`. With `own_key`, a subtree that belongs to another job is left out:
    a supervisor of another job (a gpudeck job launched from inside this one reparents to this
    supervisor, the nearest subreaper) or a process carrying another job's key.

    Walked down from `root` through the kernel's children lists, so it reads the tree's processes
    only, however many others the host runs (issue 33: 200 jobs' processes are not read to find one
    job's); a kernel without them (no CONFIG_PROC_CHILDREN) gets every process's parent instead."""
    children_of = _children if _has_children_lists() else _children_from(parent_map())
    found: Set[int] = set()
    stack = [root]
    while stack:
        for child in children_of(stack.pop()):
            if child not in found and not (own_key is not None and _of_another_job(child, own_key)):
                found.add(child)
                stack.append(child)
    return found


_children_lists: Optional[bool] = None


def _has_children_lists() -> bool:
    global _children_lists
    if _children_lists is None:
        pid = os.getpid()
        _children_lists = os.path.exists("/proc/%d/task/%d/children" % (pid, pid))
    return _children_lists


def _children(pid: int) -> List[int]:
    """pid's children: each of its threads lists those it forked."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []  # gone
    out: List[int] = []
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid), "rb") as f:
                out.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue  # that thread ended meanwhile
    return out


def _children_from(parents: Dict[int, int]) -> Callable[[int], List[int]]:
    children: Dict[int, List[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    return lambda pid: children.get(pid, [])


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


def job_tree(job_key: str, supervisor_pid: Optional[int], own_subreaper: bool = False) -> Set[int]:
    """Live, non-zombie processes of the job, never including the supervisor itself.

    `own_subreaper`: `supervisor_pid` is the job's own supervisor, a child subreaper since before the
    command started, so every process of the job is below it (an orphan reparents to it) and the
    host-wide look for the job's marker is skipped: the walk reads the job's processes only. An
    adopter's or a watch's job is not below it: the marker finds what is left of it anywhere."""
    pids = set() if own_subreaper and supervisor_pid else marked_processes(job_key)
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


def kill_tree_until_gone(
    job_key: str, supervisor_pid: Optional[int], timeout: float = 10.0, own_subreaper: bool = False
) -> bool:
    """SIGKILL every process of the tree, again for late forks, until none is left."""
    deadline = time.monotonic() + timeout
    while True:
        pids = job_tree(job_key, supervisor_pid, own_subreaper)
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
