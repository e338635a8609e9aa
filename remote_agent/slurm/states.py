"""A Slurm node's state as `jobs` tells it: its journal, with what Slurm says laid over it.

Pending: `pending` with Slurm's reason. Running: the journal's state (never `lost` while Slurm runs
it: a lock on a shared file system may not be seen from the login node), with the Slurm job id and
node list. Ended: the journal's end, its cause naming Slurm's state; a node whose supervisor never
wrote its end (cancelled while pending, a TIMEOUT or NODE_FAIL that took the supervisor too) gets
its end journaled here, from Slurm's record, under the free journal lock (as orphan.py does).
"""

from __future__ import annotations

import fcntl
import os
from typing import Any, Dict, List, Optional

from ..jobstate import TERMINAL_STATES, JobView, supervisor_alive
from ..storage.files import open_private
from ..storage.journal import JournalWriter
from ..storage.layout import JobFiles
from ..supervision.control import read_control
from ..supervision.lostjob import read_lost_job
from .commands import SlurmError
from .hostlist import node_of_rank
from .placed import is_slurm as is_slurm  # re-exported: its callers ask it here
from .queue import SlurmJob, ended_jobs, squeue
from .record import read_record, write_record
from .script import OUTPUT_PATTERN

# Slurm's end → gpudeck's state; the Slurm word is kept in the cause.
ENDINGS = {
    "COMPLETED": "exited",
    "FAILED": "failed",
    "CANCELLED": "stopped",
    "TIMEOUT": "failed",
    "NODE_FAIL": "failed",
    "PREEMPTED": "stopped",
    "OUT_OF_MEMORY": "failed",
    "BOOT_FAIL": "failed",
    "DEADLINE": "failed",
}


class SlurmLook:
    """One request's look at Slurm: one squeue for all of the user's jobs, each ended job asked once."""

    def __init__(self) -> None:
        self._queue: Optional[Dict[str, SlurmJob]] = None
        self._ended: Dict[str, Optional[SlurmJob]] = {}
        self.error: Optional[str] = None

    def job(self, slurm_id: str) -> Optional[SlurmJob]:
        """Slurm's picture of the job; None when Slurm cannot be asked or has forgotten it."""
        if self._queue is None:
            try:
                self._queue = squeue()
            except SlurmError as exc:
                self.error, self._queue = str(exc), {}
        live = self._queue.get(slurm_id)
        if live is not None and not live.ended:
            return live
        if self.error is not None:
            return None
        if slurm_id not in self._ended:
            self._ended[slurm_id] = ended_jobs([slurm_id]).get(slurm_id) or live
        return self._ended[slurm_id]


def fold_slurm(view: JobView, obj: Dict[str, Any], look: SlurmLook) -> Dict[str, Any]:
    """The node's object with Slurm's word laid over it; `slurm.node`: the compute node its rank
    runs on (the client shows each node's GPUs under it: every rank's host is the login node)."""
    obj = _fold(view, obj, look)
    slurm = obj.get("slurm")
    if isinstance(slurm, dict):
        where = node_of_rank(slurm.get("nodes"), str(view.fields.get("node")))
        if where is not None:
            slurm["node"] = where
        gpus = slurm.get("alloc_gpus")
        count = ((view.spec or {}).get("placement") or {}).get("nodes")
        if isinstance(gpus, int) and isinstance(count, int) and count > 0:
            slurm["node_gpus"] = gpus / count  # a node's part of the job's allocated GPUs (sacct)
    return obj


def _fold(view: JobView, obj: Dict[str, Any], look: SlurmLook) -> Dict[str, Any]:
    record = read_record(view.files.dir)
    if record is None:
        return obj  # being submitted: `starting`
    slurm: Dict[str, Any] = {"job_id": record["job_id"], "script": record.get("script"), "settled": True}
    placement = (view.spec or {}).get("placement") or {}
    slurm["gpus_per_node"] = placement.get("gpus_per_node")  # what a per-GPU-hour rate bills
    if isinstance(record.get("resubmit"), dict):  # a restart or resize whose allocation was refused
        slurm["resubmit"] = record["resubmit"]
    obj["slurm"] = slurm
    end = record.get("end")
    if obj["state"] in TERMINAL_STATES:
        if not isinstance(end, dict):
            job = look.job(record["job_id"])
            if job is not None and not job.ended:
                slurm.update(job.to_wire(), settled=False)  # the batch step still winds down
                return obj
            end = job.to_wire() if job is not None else {"state": None}
            write_record(view.files.dir, dict(record, end=end))
        slurm.update(end)
        if end.get("state") and "Slurm: " not in (obj.get("cause") or ""):
            obj["cause"] = (
                "%s (Slurm: %s)" % (obj["cause"], end["state"])
                if obj.get("cause")
                else "Slurm: %s" % end["state"]
            )
        return obj
    job = look.job(record["job_id"])
    if job is None:
        if look.error is not None:
            slurm["error"] = look.error
            obj["state"] = view.fields["state"]  # cannot tell: as its journal says, not `lost`
        return obj
    slurm.update(job.to_wire())
    if job.state == "PENDING":
        obj["state"] = "pending"
        obj["cause"] = "waiting for allocation: %s" % (job.reason or "Slurm gives no reason")
        return obj
    if not job.ended:
        if obj["state"] == "lost":
            obj["state"] = view.fields["state"]
        return obj
    if supervisor_alive(view.files.lock):
        return obj  # its supervisor is writing its end now
    if record_end(view.files, job):
        obj = dict(view.refresh(), slurm=slurm)
        write_record(view.files.dir, dict(record, end=job.to_wire()))
        if "Slurm: " not in (obj.get("cause") or ""):
            obj["cause"] = "Slurm: %s" % job.state
    return obj


def batch_tail(files: JobFiles, job: SlurmJob, lines: int = 10) -> List[str]:
    """The end of the batch step's own output (srun's messages: a node that could not start the
    supervisor says why there, and nowhere else)."""
    path = files.dir.parent / "0" / (OUTPUT_PATTERN.replace("%j", job.job_id))
    try:
        with open(str(path), "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


def end_record(job: SlurmJob, asked: Optional[str] = None) -> Dict[str, Any]:
    """`asked`: the stop or kill gpudeck asked for (control.json), which a cancel carried out."""
    state = ENDINGS.get(job.state, "failed")
    if asked == "kill" and job.state == "CANCELLED":
        state = "killed"
    code = job.exit_code if state == "failed" and job.exit_code else (0 if state == "exited" else None)
    return {"state": state, "exit_code": code, "signal": None, "cause": "Slurm: %s" % job.state, "tail": []}


def record_end(files: JobFiles, job: SlurmJob) -> bool:
    """Journal the end Slurm recorded for a node whose supervisor is gone; False when one holds the lock."""
    try:
        lock_fd = open_private(files.lock, os.O_RDWR | os.O_CREAT)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        if read_lost_job(files.journal).ended:
            return True  # its supervisor wrote it after all, before it let go of the lock
        journal = JournalWriter(files.journal)
        try:
            asked = read_control(files.control)
            end = dict(end_record(job, asked[0] if asked else None), tail=batch_tail(files, job))
            return journal.append("state", **end) is not None
        finally:
            journal.close()
    finally:
        os.close(lock_fd)
