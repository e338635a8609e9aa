"""The supervisor of a watch job: a FileFollower in place of the command.

Everything else is the Supervisor's: the journal and its lock, the output reader and the metric
parser (the follower copies the watched file into output.log, which the reader parses as if a
command had printed it), heartbeats, stop/kill requests. What differs:
- there is no child: the job's processes are the watched pid's tree (none without --pid);
- without a pid, stop (and kill) end the watch only; nothing of the run is signalled;
- with a pid, stop sends the stop signal to it, SIGKILL to its tree after the grace; kill SIGKILLs
  the tree; when the tree is gone by itself the watch ends `exited` with the code unknown
  (the run is not our child: its exit status is not ours to read).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, Dict, Optional

from ..probes.jobgpus import sample_job_gpus
from ..slurm.stepgpus import AllocationSampler
from ..spec_defaults import DEFAULT_GRACE
from ..storage.layout import JobFiles
from .follow_file import FileFollower
from .proctree import signal_pids
from .supervisor import TICK, Supervisor
from .watchspec import signal_watched, watched_tree

FOLLOWER_JOIN = 30.0
SLURM_POLL = 3.0  # seconds between two asks of slurmctld whether a watched Slurm job ended
READ_ONLY_CAUSE = "the watch ended; the run itself was not signalled (read-only watch)"


class WatchSupervisor(Supervisor):
    IDLE_WAIT = TICK  # its command is no child of ours: no SIGCHLD says it ended, so poll
    COMMAND_IS_CHILD = False

    def __init__(self, files: JobFiles, spec: Dict[str, Any]) -> None:
        super().__init__(files, spec)
        self.watch = spec["watch"]
        self.follower: Optional[FileFollower] = None
        self._copier: Optional[threading.Thread] = None
        self._slurm_asked = 0.0
        self._slurm_end: Optional[str] = None  # Slurm's end state of a watched Slurm job
        self._allocation: Optional[AllocationSampler] = None  # its GPUs, by srun --overlap

    @property
    def has_pid(self) -> bool:
        return isinstance(self.watch.get("pid"), int)

    def _start_command(self) -> bool:
        assert self.journal is not None
        out_fd = self._open_output()
        if out_fd is None:
            return False
        if self.watch.get("path"):
            self.follower = FileFollower(self.watch["path"], out_fd, bool(self.watch.get("from_end")))
            self._copier = threading.Thread(target=self._copy, args=(out_fd,), name="watch-copy", daemon=True)
            self._copier.start()
        else:  # a TensorBoard LOGDIR alone: its points come from tbread, output.log stays empty
            os.close(out_fd)
        self.journal.append("state", state="running", pid=self.watch.get("pid"), watch=self.watch["path"])
        self._reader = threading.Thread(target=self._follow_output, daemon=True)
        self._reader.start()
        return True

    def _copy(self, out_fd: int) -> None:
        assert self.follower is not None
        try:
            self.follower.run()
        finally:
            os.close(out_fd)

    def _begin_stop(self, grace: Optional[float] = None) -> None:
        assert self.journal is not None
        if grace is None:
            grace = float(self.spec.get("grace", DEFAULT_GRACE))
        if not self.has_pid:
            self.deadline = time.monotonic()
            self.journal.append(
                "event", event="watch_ended", data={"reason": self.reason, "path": self.watch["path"]}
            )
            return
        self.deadline = time.monotonic() + grace
        self.journal.append("event", event="stop_requested", data={"grace": grace, "reason": self.reason})
        signal_watched(
            self.spec, getattr(signal, str(self.spec.get("stop_signal") or "SIGTERM"), signal.SIGTERM)
        )

    def _finished(self) -> bool:
        if self.requested in ("stop", "kill") and self.has_pid:
            tree = watched_tree(self.spec)
            if tree:
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    signal_pids(tree, signal.SIGKILL)
                return False
        elif self.requested is None:
            if self.watch.get("slurm_job"):
                if not self._slurm_ended():
                    return False
            elif not self.has_pid or watched_tree(self.spec):
                return False
            self.requested, self.reason = "ended", None  # the run ended by itself
        self._end_copy()
        return True

    def _slurm_ended(self) -> bool:
        """Whether Slurm says the watched job ended (asked every SLURM_POLL s; unknown: not ended)."""
        now = time.monotonic()
        if now - self._slurm_asked < SLURM_POLL:
            return False
        self._slurm_asked = now
        from ..slurm.queue import scontrol_job

        job = scontrol_job(str(self.watch["slurm_job"]))
        if job is None or not job.ended:
            return False
        self._slurm_end = job.state
        return True

    def _end_copy(self) -> None:
        """Everything the file holds now reaches output.log before the reader's final drain."""
        if self.follower is not None and self._copier is not None:
            self.follower.stop()
            self._copier.join(timeout=FOLLOWER_JOIN)

    def _sample_gpus(self) -> None:
        if self.watch.get("slurm_job"):  # a step in its allocation reads its nodes' GPUs
            self._sample_allocation()
            return
        if self._gpu is False or not self.has_pid:
            return
        try:
            gpus = sample_job_gpus(watched_tree(self.spec), self.spec)
        except Exception:
            gpus = None
        if gpus is None:
            self._gpu = False
        elif gpus and self.steady.gpu_due(gpus, time.monotonic()):
            assert self.journal is not None
            if self.journal.append("gpu", gpus=gpus) is not None:
                self.steady.gpu_written(gpus, time.monotonic())

    def _sample_allocation(self) -> None:
        if self._allocation is None:
            self._allocation = AllocationSampler(str(self.watch["slurm_job"]))
        gpus = self._allocation.take()  # the reading since the last one; the next one starts
        if gpus and self.steady.gpu_due(gpus, time.monotonic()):
            assert self.journal is not None
            if self.journal.append("gpu", gpus=gpus) is not None:
                self.steady.gpu_written(gpus, time.monotonic())

    def _write_final_state(self) -> None:
        assert self.journal is not None
        fields: Dict[str, Any] = {"exit_code": None, "signal": None}
        if self.requested == "kill":
            fields.update(state="killed", reason=self.reason)
        elif self.requested == "stop":
            fields.update(state="stopped", reason=self.reason)
        elif self._slurm_end is not None:
            fields.update(state="exited", cause="the watched Slurm job ended (Slurm: %s)" % self._slurm_end)
        else:
            fields.update(state="exited", cause="the watched process ended (exit code unknown)")
        if self.requested in ("stop", "kill") and not self.has_pid:
            fields["cause"] = READ_ONLY_CAUSE
        self.journal.append("state", **fields)
        self._flush_journal()
