"""`run JOB_DIR --adopt WHY`: a new supervisor for a job whose supervisor is gone but whose
processes live on. It takes the free lock, journals `adopted` (with why), follows output from
where the journal stopped, enforces the budget and idle stop again (counted from the journal's own
timestamps), and journals the end. The command is not its child: its exit code is unknowable, and
the end record says so instead of guessing.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Dict, List, Tuple

from ..storage.files import open_private
from ..storage.journal import JournalWriter
from .adoption import output_size, take_lost_why
from .autostop import AutoStop
from .joblock import take as take_lock
from .jobschanged import note_change
from .lostjob import LostJob, OutputReplay, read_lost_job, unknown_end
from .proctree import JOB_MARKER_VAR, is_live, job_tree, set_child_subreaper
from .resize import ResizeNote
from .supervisor import EXIT_ALREADY_SUPERVISED, TICK, Supervisor


class AdoptedCommand:
    """Stands for the Popen the first supervisor had: a pid, and no exit status to wait for."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode = None


class AdoptingSupervisor(Supervisor):
    IDLE_WAIT = TICK  # its command is no child of ours: no SIGCHLD says it ended, so poll

    def __init__(self, files: Any, spec: Dict[str, Any], why: str) -> None:
        super().__init__(files, spec)
        self.why = why
        self.lost = LostJob()
        self._replay = OutputReplay([])
        self._pid_alive = False

    def run(self) -> int:
        lock_fd = open_private(self.files.lock, os.O_RDWR | os.O_CREAT)
        if not take_lock(lock_fd):
            return EXIT_ALREADY_SUPERVISED  # adopted already (or never lost)
        noted = take_lost_why(self.files)  # who ended a frozen supervisor, and why (serving/frozen.py)
        if noted is not None:
            self.why = "its supervisor was gone (found by %s)" % noted
        note_change(self.agent_dir)  # a budgeted neighbour counts its share again (jobschanged.py)
        set_child_subreaper()
        self._install_signal_handlers()
        self.journal = JournalWriter(self.files.journal)  # cuts a torn last line first
        self.lost = read_lost_job(self.files.journal)
        if self.lost.ended or not self.lost.started:
            self.journal.close()  # ended after all, or never started: nothing to adopt
            return 0
        self._pid_alive = self._command_is_ours()
        if (
            not self._pid_alive
            and not job_tree(self.key, os.getpid())
            and output_size(self.files) <= self.lost.resume_offset
        ):
            # Nothing of it is left, nothing unread: say how it ended, as far as anyone can know.
            if self.container is not None:
                self.container.remove(self.journal.append)
            self._write_final_state()
            self.let_go(lock_fd)
            return 0
        self.journal.append(
            "event",
            event="adopted",
            data={
                "why": self.why,
                "supervisor_pid": os.getpid(),
                "previous_supervisor_pid": self.lost.previous_supervisor,
                "lost_at": self.lost.lost_at,
                "pid": self.lost.pid,
                "output_offset": self.lost.resume_offset,
            },
        )
        self.proc = AdoptedCommand(self.lost.pid or 0)  # type: ignore[assignment]
        if not self._pid_alive:
            self.exit_status = 0  # the command itself has ended: strays, or unread output, are left
        self._start_following()
        self._loop()
        self.let_go(lock_fd)
        return 0

    def _command_is_ours(self) -> bool:
        """The journal's pid is still this job's command (a reused pid lacks the job's marker)."""
        pid = self.lost.pid
        if pid is None or not is_live(pid):
            return False
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            return False
        return ("%s=%s" % (JOB_MARKER_VAR, self.key)).encode() in env

    def _start_following(self) -> None:
        assert self.journal is not None
        self._read_pos = self._journaled_pos = self.lost.resume_offset
        self.last_values = self.lost.last_values
        self._replay = OutputReplay(self.lost.after_resume)
        self.advice.said |= self.lost.advised  # each kind once per node, across supervisors
        if self.lost.resized_said:
            self.resize_note = ResizeNote({})  # said by the first supervisor: once per node
        self._heartbeat_pos = self.lost.resume_offset
        if self.output_cap is not None and self.lost.output_dropped_to > self.output_cap.dropped_to:
            self.output_cap.dropped_to = self.lost.output_dropped_to  # the hole the first one made
        started = min(self.lost.running_at, time.time()) if self.lost.running_at else None
        self.autostop = AutoStop(self.spec, self.journal.append, files_dir=self.files.dir, started=started)
        self.autostop.warned = self.lost.budget_warned
        self._reader = threading.Thread(target=self._follow_output, daemon=True)
        self._reader.start()

    def _fresh(self, entries: List[Tuple[str, Dict[str, Any]]]) -> List[Tuple[str, Dict[str, Any]]]:
        return self._replay.fresh(entries)

    def _reap(self) -> None:
        super()._reap()  # strays that reparented to us
        if self.exit_status is None and not (self._pid_alive and self._command_is_ours()):
            self._pid_alive = False
            self.exit_status = 0  # ended; with what code, only its parent (gone) could know
            # A stop or kill may have ended it before we were woken (we were not yet known to
            # whoever asked): read control.json before calling this a natural end.
            self._control_flag.set()

    def _write_final_state(self) -> None:
        assert self.journal is not None
        end = unknown_end(self.lost, self.requested, self.reason)
        if self.notice is not None and self.reason == "preempted":
            end["notice"] = self.notice  # the adopter saw the provider's notice (preempt/)
        end.update(self.gpu_free.end_fields(self.journal.append))
        self.journal.append("state", **end)
        self._notify(end)
        self._flush_journal()
