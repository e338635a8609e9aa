"""Stopping a job whose supervisor died (`lost`): the agent finds the tree by its env marker,
ends it, and takes the free journal lock to record how it ended."""

from __future__ import annotations

import fcntl
import os
import signal
import time
from typing import Any, Dict

from ..containers.supervised import ContainerJob
from ..storage.files import open_private
from ..storage.journal import JournalWriter
from ..storage.layout import JobFiles
from .gpufree import GpuFree
from .jobspec import job_key
from .lostjob import read_lost_job
from .proctree import is_live, job_tree, kill_tree_until_gone, signal_pids


def end_orphaned_job(files: JobFiles, spec: Dict[str, Any], pid: Any, action: str, grace: float) -> bool:
    """True when it ended the job; False when a supervisor holds the lock after all."""
    lock_fd = open_private(files.lock, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        key = job_key(spec)
        gpus = GpuFree(key, spec, files.dir)  # GPUs proven free (gpufree.py)
        if action == "stop":
            sig = getattr(signal, str(spec.get("stop_signal") or "SIGTERM"), signal.SIGTERM)
            if isinstance(pid, int) and pid in job_tree(key, None) and is_live(pid):
                signal_pids([pid], sig)
            deadline = time.monotonic() + grace
            while job_tree(key, None) and time.monotonic() < deadline:
                time.sleep(0.05)
        gpus.saw_leftovers(job_tree(key, None))  # which of what is left holds a GPU, before the kill
        kill_tree_until_gone(key, None)
        container = ContainerJob.of(spec, files.dir)
        if container is not None:
            container.remove()  # the runtime's record of it: nothing of the job is left
        journal = JournalWriter(files.journal)  # cuts a torn last line first
        try:
            lost = read_lost_job(files.journal)
            if lost.ended:
                return True  # its own supervisor wrote the end before it let go of the lock
            # Every line printed before the end is journaled before the end is (drain.py).
            # here: the drain brings the whole Supervisor (the line parser…), which a listing
            # (`ps` of the local host reads this module's caller) never needs
            from .drain import journal_unread_output

            journal_unread_output(files, spec, lost, journal)
            state = "stopped" if action == "stop" else "killed"
            journal.append(
                "state",
                state=state,
                exit_code=None,
                signal=None,
                reason="user (supervisor was lost)",
                **gpus.end_fields(journal.append),
            )
        finally:
            journal.close()
        return True
    finally:
        os.close(lock_fd)


def record_failed_start(files: JobFiles, cause: str) -> None:
    """A supervisor that died before its first record leaves no writer: record the failure for it."""
    lock_fd = open_private(files.lock, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return
        journal = JournalWriter(files.journal)
        try:
            if journal.last_seq == 0:
                journal.append("state", state="failed", exit_code=None, signal=None, cause=cause, tail=[])
        finally:
            journal.close()
    finally:
        os.close(lock_fd)
