"""`run`: the per-job supervisor. Owns the command's process tree and is the journal's one writer."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Deque, Dict, List, Optional, Set, Tuple

from .. import VERSION
from ..advice.watch import AdviceWatch
from ..gpus.record import read_assignment
from ..loggerfiles.follow import LoggerFilesIn
from ..loggerfiles.gate import LoggerGate
from ..notify.end import notify_end, notify_event
from ..preempt.act import NOTICE_VAR, REASON, notice_grace, notice_path, public, write_notice
from ..spec_defaults import DEFAULT_GRACE
from ..stacks.faultroute import STACKS_VAR, make_stacks_dir
from ..stacks.notes import event_data, take_notes
from ..storage.files import describe_os_error, open_private
from ..storage.journal import JournalWriter
from ..storage.jsonio import loads_object
from ..storage.layout import JobFiles
from ..storage.watch import Watcher, file_watcher
from ..tbread.follow import TensorBoardIn
from . import hold, memtrim
from .autostop import AutoStop, read_paused
from .control import KILL_SIGNAL, read_control
from .deleted import JOB_DIR_VAR
from .elastic_failure import DROPPED, WORKER_FAILED, elastic, own_failure
from .elastic_resize import ElasticResizes, read_resize_note
from .failure import LastException, failure_cause
from .gpufree import GpuFree
from .joblock import take as take_lock
from .jobschanged import note_change
from .jobspec import job_env, job_key, shell_script
from .keeperwatch import KeeperWatch
from .launcher import self_command
from .lines import LineSplitter
from .loopwake import LoopWake, WakingEvent
from .outputcap import DEFAULT_OUTPUT_CAP, OutputCap
from .pace_note import PaceNotes, take_note
from .proctree import job_tree, kill_tree_until_gone, set_child_subreaper, signal_name, signal_pids
from .resize import ResizeNote
from .stall import StallWatch
from .steady import Steady

# Imported where first used (issue 33): a supervisor lives as long as its job, and what it imports
# stays loaded in each of the host's supervisors. An idle job's (`sleep 600`) needs none of these:
# the log parser until a line comes, NVML until its first GPU look, a container's or a provider's
# notice's modules only for such a job, a stack dump or a stall's restart only when one happens.
if TYPE_CHECKING:
    from ..containers.supervised import ContainerJob
    from ..metrics import LineParser
    from ..preempt.watch import NoticeWatch
    from ..probes.gpuhealth import HealthProbe
    from ..probes.jobcpu import JobCpu

EXIT_ALREADY_SUPERVISED = 3
TAIL_LINES = 20
LEFTOVER_GRACE = 10.0
TICK = 0.05  # the loop's longest sleep while a job stops (its tree is polled until it is gone)
OUTPUT_POLL = 0.05
OUTPUT_POLL_MAX = 2.0  # a quiet job's output is looked at this often where inotify is not to be had
WATCH_RETRY_POLLS = 30  # polls between tries for an inotify instance (another process may free one)
DRAIN_STALL = 30.0  # the final drain gives up only when the reader made no progress for this long
READ_BYTES = 65536  # output.log's bytes read at once
JOURNAL_RETRY = 1.0  # how often a journal that fell behind (full disk) tries again
JOURNAL_GIVE_UP = 600.0  # then the supervisor lets go of the job (its end is journaled by the next look)
JOURNAL_GIVE_UP_VAR = "GPUDECK_JOURNAL_GIVE_UP"
RULES_EVERY = 1.0  # seconds between looks at what no signal announces (a budget, an idle rule, Slurm)


class Supervisor:
    # The loop's longest sleep while the job runs with nothing due (None: until something is): its
    # command's end (SIGCHLD), a request (serve writes the file, then signals), the keeper's end (a
    # pidfd) and the reader's flags wake it at once (issue 33: an idle job's supervisor costs nothing).
    # A supervisor whose command is no child of its own (an adopter, a watch) has no SIGCHLD to wait
    # for: it polls at TICK.
    IDLE_WAIT: Optional[float] = None
    COMMAND_IS_CHILD = True  # a watch's command is not (watchjob.py): its tree walks look host-wide

    def __init__(self, files: JobFiles, spec: Dict[str, Any]) -> None:
        self.files = files
        self.spec = spec
        self.key = job_key(spec)
        self.journal: Optional[JournalWriter] = None
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.exit_status: Optional[int] = None  # raw waitpid status of the command
        self.tail: Deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.last_values: Optional[Dict[str, Any]] = None
        self.resize_note = ResizeNote(spec)
        self.elastic_resizes = ElasticResizes(spec, files.dir.parent)
        self.elastic = elastic(spec)
        self.own_failure: Optional[Tuple[int, str]] = (
            None  # elastic: (exit code, cause) of this node's own failure
        )
        self.last_exception = LastException()
        self._parser: Optional[LineParser] = None  # made at the first line (the parser property)
        self.logger_gate = LoggerGate()  # printed values a logger's files give (loggerfiles/gate.py)
        self.requested: Optional[str] = None  # "stop" or "kill"
        self.reason: Optional[str] = None
        self.deadline: Optional[float] = None
        self._wake = LoopWake()  # what the loop sleeps on (loopwake.py)
        self._control_flag = WakingEvent(self._wake.wake)
        self._output_done = threading.Event()
        self._output_watch: Optional[Watcher] = None
        self._reader: Optional[threading.Thread] = None
        self._gpu: Optional[bool] = None  # False: no NVML here, GPUs are not sampled again
        # A steady job's repeated heartbeats and GPU samples are thinned (steady.py says what is kept).
        self.steady = Steady(
            float(spec.get("heartbeat_interval", 10.0)),
            float(spec.get("gpu_interval", 10.0)),
            started=time.monotonic(),
        )
        self._quiet = False  # the loop sleeps to the next repeat heartbeat: new output wakes it
        self._logger_files: Optional[LoggerFilesIn] = None
        self.autostop: Optional[AutoStop] = None
        self.stall = StallWatch(spec)  # no progress for longer than its own pace allows (stall.py)
        self.pace_notes = PaceNotes()  # the client's straggler / likely-hang judgement (pace_note.py)
        self._gpu_utils: List[Any] = []  # the last GPU sample's utilisations: a stall's evidence
        self.gpu_free = GpuFree(self.key, spec, files.dir)  # the end proves its GPUs free (gpufree.py)
        self.advice = AdviceWatch(spec)  # the seeds' troubleshooting, from evidence (advice/)
        self._cpu: Optional[JobCpu] = None  # made at the first look at the job's GPUs
        self._health: Optional[HealthProbe] = None
        self._untold: Deque[str] = collections.deque()  # advice the notify targets are yet to be told
        self._kill_flag = False
        self._read_pos = (
            0  # bytes of output.log the reader has read (where it starts: 0, or an adopter's resume point)
        )
        self._stop_reading = False
        # Bytes of output.log whose lines are journaled: heartbeats carry it (under _out_lock, so it
        # is exact), and a supervisor adopting this job after a loss resumes parsing there.
        self._journaled_pos = 0
        self._out_lock = threading.Lock()
        # The output cap drops only what the last heartbeat covers: an adopter resumes there, never in a hole.
        self._heartbeat_pos = 0
        cap = spec.get("output_cap", DEFAULT_OUTPUT_CAP)
        self.output_cap = OutputCap(files.output, cap) if isinstance(cap, int) and cap > 0 else None
        self._cap_unsupported_said = False
        self._gap_unsaid = False
        self.container: Optional[ContainerJob] = None  # None: the command runs on the bare host
        if spec.get("runtime"):  # (ContainerJob.of reads the typed spec: dataclasses, only here)
            from ..containers.supervised import ContainerJob

            self.container = ContainerJob.of(spec, self.files.dir)
        # The provider's preemption notice (preempt/): seen by the watch's thread, acted on by the loop
        self.notice: Optional[Dict[str, Any]] = None
        self._notice_pending: Optional[Dict[str, Any]] = None
        self._notice_watch: Optional[NoticeWatch] = None
        self._restart_after_stall = False  # the stall action `restart` stopped it (stall_restart.py)
        self._own_tree = False  # its command is its child and it is a subreaper (run)

    @property
    def parser(self) -> LineParser:
        """The log parser (it remembers a table's header for the rows under it), made when the
        first line comes: its modules and compiled patterns are most of a supervisor's imports."""
        if self._parser is None:
            from ..metrics import LineParser

            self._parser = LineParser()
        return self._parser

    # -- lifecycle -------------------------------------------------------------------------------

    def run(self) -> int:
        lock_fd = open_private(self.files.lock, os.O_RDWR | os.O_CREAT)
        if not take_lock(lock_fd):  # a look holding it for an instant is waited out
            return EXIT_ALREADY_SUPERVISED
        note_change(self.agent_dir)  # a budgeted neighbour counts its share again (jobschanged.py)
        # Every process it starts stays below it (orphans reparent to it): its tree walks need no
        # host-wide look (proctree.job_tree), so they cost the same beside 1 job or 200.
        self._own_tree = set_child_subreaper() and self.COMMAND_IS_CHILD
        self._install_signal_handlers()
        self.journal = JournalWriter(self.files.journal)
        self.journal.append("state", state="starting", supervisor_pid=os.getpid(), agent_version=VERSION)
        assigned = read_assignment(self.files.dir)
        if assigned is not None:  # the GPUs the launch gave it (gpus/assign.py), by UUID
            self.journal.append("event", event="gpus_assigned", data=assigned)
        if self._start_command():
            self._loop()
        self.let_go(lock_fd)
        return 0

    @property
    def agent_dir(self) -> Path:
        return self.files.dir.parent.parent.parent

    def let_go(self, lock_fd: int) -> None:
        """The end is journaled: the lock goes now, then the mark that a live supervisor went."""
        try:
            os.close(lock_fd)
        except OSError:
            pass
        note_change(self.agent_dir)

    def _install_signal_handlers(self) -> None:
        # Handlers only set flags: the loop acts, so no journal write ever races a half-written one.
        def on_control(signum: int, frame: Any) -> None:
            self._control_flag.set()

        def on_kill(signum: int, frame: Any) -> None:
            self._kill_flag = True
            self._control_flag.set()

        def on_terminate(signum: int, frame: Any) -> None:
            if self.requested is None:
                self.requested, self.reason = "stop", "supervisor got %s" % signal_name(signum)
                self.deadline = None

        signal.signal(signal.SIGUSR1, on_control)
        signal.signal(KILL_SIGNAL, on_kill)
        signal.signal(signal.SIGTERM, on_terminate)
        signal.signal(signal.SIGINT, on_terminate)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self._wake.arm_signals()  # each handled signal (and SIGCHLD: the command's end) wakes the loop

    def _prepare_steps(self) -> Tuple[Optional[List[str]], Optional[List[str]], str, Optional[List[str]]]:
        """The `prepare` argv for the code and data, for the environment, and for a container job's
        environment the image it is built in (remote_agent/prepare; containers/environment.py)."""
        agent = self_command() + ["prepare"]
        needs_files = bool(self.spec.get("code") or self.spec.get("data"))
        environment = self.spec.get("environment")
        python = (environment.get("python") if isinstance(environment, dict) else None) or "python3"
        inside = bool(environment) and self.container is not None  # built in the container
        return (
            agent + ["files", str(self.files.dir)] if needs_files else None,
            agent + ["env", str(self.files.dir)] if environment and not inside else None,
            python,
            agent + ["image", str(self.files.dir)] if inside else None,
        )

    def _open_output(self) -> Optional[int]:
        """output.log opened for appending; None (the job journaled `failed`) when it cannot be."""
        assert self.journal is not None
        try:
            return open_private(self.files.output, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError as exc:
            self.journal.append(
                "state",
                state="failed",
                exit_code=None,
                signal=None,
                cause="could not open output.log: %s" % describe_os_error(exc),
                tail=[],
            )
            self._flush_journal()
            return None

    def _start_command(self) -> bool:
        assert self.journal is not None
        # The command writes straight into output.log (not a pipe through us): if the supervisor
        # dies, the job keeps running and keeps every byte, instead of dying of SIGPIPE.
        # its node dir too: a job whose dir is deleted is still found by it (deleted.py)
        env = dict(job_env(self.spec, os.environ), **{JOB_DIR_VAR: str(self.files.dir)})
        env[NOTICE_VAR] = str(notice_path(self.files.dir))  # appears on a preemption notice (preempt/act.py)
        stacks = make_stacks_dir(self.files.dir)  # where a program's faulthandler opt-in writes (stacks/)
        if stacks is not None:
            env[STACKS_VAR] = str(stacks)
        try:
            command = self.container.argv(env) if self.container else list(self.spec["argv"])
        except OSError as exc:  # the container's env file (containers/envfile.py)
            cause = "could not write the container's env file: %s" % describe_os_error(exc)
            self.journal.append("state", state="failed", exit_code=None, signal=None, cause=cause, tail=[])
            self._flush_journal()
            return False
        argv = [
            "bash",
            "-lc",
            shell_script(self.spec.get("setup") or [], self.spec.get("path"), *self._prepare_steps()),
            "gpudeck-job",
        ] + command
        if self.spec.get("pty"):  # its output a terminal: Rich and Keras draw as for their user
            argv = self_command() + ["pty", "--"] + argv
        hold.prepare(self.spec, self.files, env)  # --hold-on-fail: cores allowed, env kept (hold.py)
        out_fd = self._open_output()
        if out_fd is None:
            return False
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out_fd,
                stderr=out_fd,
                cwd=self.spec["workdir"],
                env=env,
                close_fds=True,
                start_new_session=True,
            )
        except OSError as exc:
            cause = "could not start the command: %s" % exc
            self.journal.append("state", state="failed", exit_code=None, signal=None, cause=cause, tail=[])
            self._flush_journal()
            return False
        finally:
            os.close(out_fd)
        self.journal.append("state", state="running", pid=self.proc.pid)
        if self.container is not None:
            self.container.started(self.journal.append, lambda: self.exit_status is None)
        self.autostop = AutoStop(self.spec, self.journal.append, files_dir=self.files.dir)
        self._reader = threading.Thread(target=self._follow_output, daemon=True)
        self._reader.start()
        return True

    # -- output ----------------------------------------------------------------------------------

    def _follow_output(self) -> None:
        """tail -f of output.log, parsing as it goes; the last read after the tree is gone drains it."""
        splitter = LineSplitter()
        fd = os.open(str(self.files.output), os.O_RDONLY | os.O_CLOEXEC)
        os.lseek(fd, self._read_pos, os.SEEK_SET)
        # inotify wakes us as soon as the job writes (a line reaches clients in ms, not a poll later).
        watcher = self._output_watch = file_watcher(str(self.files.output))
        poll = OUTPUT_POLL  # without inotify (the user's instances used up: 128 by default)
        polls_unwatched = 0
        try:
            while not self._stop_reading:
                draining = self._output_done.is_set()
                chunk = os.read(fd, READ_BYTES)
                if chunk:
                    poll = OUTPUT_POLL
                    self._read_pos += len(chunk)
                    with self._out_lock:
                        self._journal_lines(splitter.feed(chunk))
                        self._journaled_pos = self._read_pos - splitter.pending
                        if self._logger_files is not None:  # it polls the logger's files while we print
                            self._logger_files.output_came()
                        if self._quiet:  # its heartbeat is due an interval from now, not a minute
                            self._quiet = False
                            self._wake.wake()
                    if len(chunk) == READ_BYTES or watcher is None or draining:
                        continue
                    # A short read reached the end: wait at once (issue 33: the read that only found
                    # nothing was a syscall a line). A write since the read is an inotify event
                    # already, and the tree's end wakes the watcher.
                    watcher.wait(self.IDLE_WAIT)
                    continue
                if draining:
                    break
                if watcher is not None:  # inotify wakes it at each write: the timeout is a safety net
                    watcher.wait(self.IDLE_WAIT)
                    continue
                # No inotify: a quiet job's reader backs off (issue 33: 200 idle jobs beyond the
                # instance limit polled 20 times a second each) and asks for an instance again.
                self._output_done.wait(poll)
                poll = min(poll * 2, OUTPUT_POLL_MAX)
                polls_unwatched += 1
                if polls_unwatched % WATCH_RETRY_POLLS == 0:
                    watcher = self._output_watch = file_watcher(str(self.files.output))
            with self._out_lock:
                self._journal_lines(splitter.flush(), final=True)
                self._journaled_pos = self._read_pos
        finally:
            os.close(fd)
            if watcher is not None:
                watcher.close()

    def _journal_lines(self, lines: List[str], final: bool = False) -> None:
        found = self._entries_for(lines)
        if final and self._parser is not None:  # the end of the output: points the parser held
            found += [("metric", {"values": values}) for values in self.parser.flush()]
        entries = self.elastic_resizes.mark(self.resize_note.mark(self._fresh(found)))
        back = self.stall.saw(entries, time.monotonic()) if lines else None
        if back is not None:
            entries.append(("event", {"event": "unstalled", "data": {"why": back}}))
        advised = self.advice.lines(lines, entries)
        entries = self.logger_gate.printed(entries + advised)  # a logger-fed series stays single
        if entries:
            assert self.journal is not None
            self.journal.append_many(entries)
        self._tell_advice(advised)

    def _fresh(self, entries: List[Tuple[str, Dict[str, Any]]]) -> List[Tuple[str, Dict[str, Any]]]:
        """The entries not journaled yet: all of them (an adopter skips those its predecessor wrote)."""
        return entries

    def _entries_for(self, lines: List[str]) -> List[Tuple[str, Dict[str, Any]]]:
        """The journal records a chunk's lines make, as _entry_for would line by line: a chunk
        without an event line (nearly all) is parsed as a batch (runs of a known template cost
        one regex match a line)."""
        if not lines:  # a part of a line, or a silent job's end: no record, and no parser made
            return []
        text = "\n".join(lines)
        # Line by line where a line may matter beyond its metrics (one C scan each; all rare): an
        # event, a traceback being followed for the cause, an elastic node judging its own failure.
        if (
            '"event"' in text
            or "Traceback" in text
            or self.last_exception.inside
            or (self.elastic and self.own_failure is None and self.requested is None)
        ):
            return [entry for entry in map(self._entry_for, lines) if entry is not None]
        self.tail.extend(lines)  # (the deque keeps the last TAIL_LINES)
        try:
            points = self.parser.parse_many(lines)
        except Exception:  # a parser bug must never stop the output from being read
            points = [None] * len(lines)
        entries = []
        last = self.last_values
        for values in points:
            # Progress bars redraw ~10x/s with the same numbers: one point is enough.
            if values and values != last:
                last = values
                entries.append(("metric", {"values": values}))
        self.last_values = last
        return entries

    def _entry_for(self, line: str) -> Optional[Tuple[str, Dict[str, Any]]]:
        """The journal record a line makes: an event, a metric point, or none."""
        self.tail.append(line)
        self.last_exception.feed(line)
        if (
            self.elastic and self.own_failure is None and self.requested is None
        ):  # not while a stop is under way
            failed = own_failure(line, self.tail, self.last_exception.last)
            if failed is None and WORKER_FAILED.search(line):
                self.last_exception.last = (
                    None  # a regroup's: the next failure is judged on its own traceback
                )
            if failed is not None:  # the loop drops this node (_drop_failed_node)
                self.own_failure = failed
                self._control_flag.set()
                return "event", {"event": "node_failed", "data": {"exit_code": failed[0], "cause": failed[1]}}
        stripped = line.strip()
        if stripped.startswith("{") and '"event"' in stripped:
            obj = loads_object(stripped)
            if obj is not None and isinstance(obj.get("event"), str):
                name = obj.pop("event")
                return "event", {"event": name[:100], "data": obj}
        try:
            values = self.parser.parse(line)
        except Exception:  # a parser bug must never stop the output from being read
            values = None
        # Progress bars redraw ~10x/s with the same numbers: one point is enough.
        if values and values != self.last_values:
            self.last_values = values
            return "metric", {"values": values}
        return None

    # -- the loop --------------------------------------------------------------------------------

    def _loop(self) -> None:
        assert self.journal is not None  # proc is None for a watch job (watchjob.py)
        heartbeat_every = float(self.spec.get("heartbeat_interval", 10.0))
        gpu_every = float(self.spec.get("gpu_interval", 10.0))
        never = float("inf")
        next_heartbeat = time.monotonic() + heartbeat_every
        next_gpu = time.monotonic() + min(2.0, gpu_every)
        next_rules = 0.0  # the first pass reads a request written before the handlers were set
        next_retry = 0.0
        # the host's keeper adopts this job if this supervisor dies (not on a Slurm compute node)
        keeper = None if self.spec.get("placement") else KeeperWatch(self.agent_dir)
        next_keeper_check = 0.0 if keeper is not None else never  # never: its pidfd says when
        if self.proc is not None and self.spec.get("notice"):  # only while a command runs, only on a
            from ..preempt.watch import NoticeWatch  # host with a provider's notice

            self._notice_watch = NoticeWatch.start(self.spec, self._on_notice, self._on_notice_error)
        # spec.tensorboard: the run's event files are read too (tbread/follow.py)
        tensorboard = TensorBoardIn.start_for(self.spec, str(self.files.dir), self._journal_points)
        # no LOGDIR given: the logger files the framework writes by default (loggerfiles/)
        logger_files = self._logger_files = LoggerFilesIn.start_for(
            self.spec, str(self.files.dir), self._journal_logged, self.logger_gate.found
        )
        self.logger_gate.look = logger_files.look if logger_files is not None else None
        # What its start (the modules it compiled) and each burst of output freed goes back to the
        # kernel while the job is quiet: once it goes quiet, and after its first look at the GPUs.
        trim_due, gpu_looked = False, False
        while True:
            self._reap()
            now = time.monotonic()
            # what falls due within a tick is done now, in the loop's order (the rules first): one
            # wake-up for all of it, as the 50 ms tick it replaces did
            soon = now + TICK
            if keeper is not None and soon >= next_keeper_check:
                wait = keeper.check()
                next_keeper_check = never if wait is None else now + wait
            if self.journal.behind and soon >= next_retry:
                self.journal.retry()  # the disk may have room again: disk_full, then what was kept
                next_retry = now + JOURNAL_RETRY
            stall_due = self.stall.due() if self.proc is not None and self.requested is None else None
            if (
                self._control_flag.is_set()
                or soon >= next_rules
                or (stall_due is not None and soon >= stall_due)
            ):
                self._control_flag.clear()
                self._apply_control()
                self._apply_notice()
                self._drop_failed_node()
                self._arm_resize_note()
                self._apply_autostop()
                self._apply_stall()
                self._apply_pace_note()
                self._send_advice()
                self._journal_dumps()
                self._trim_output()
                next_rules = now + RULES_EVERY if self._looks_on_a_timer() else never
                stall_due = self.stall.due() if self.proc is not None and self.requested is None else None
            if self.requested == "stop" and self.deadline is None:
                self._begin_stop()
            if self._finished():
                break
            if soon >= next_heartbeat:
                with self._out_lock:  # the offset and the records before it agree
                    offset = self._journaled_pos
                    if (
                        self.steady.heartbeat_due(offset, now)
                        and self.journal.append("heartbeat", output_offset=offset) is not None
                    ):
                        self._heartbeat_pos = offset
                        self.steady.heartbeat_written(offset, now)
                        self._trim_output()  # the cap may drop what this heartbeat covers now
                next_heartbeat = now + heartbeat_every
            if soon >= next_gpu:
                self._sample_gpus()
                next_gpu = now + gpu_every if self._gpu is not False else never
                trim_due = trim_due or not gpu_looked  # its first look's imports (NVML) end its start
                gpu_looked = True
            with self._out_lock:  # quiet: nothing printed since the last heartbeat; output wakes it
                quiet_until = self.steady.quiet_until(self._journaled_pos)
                trim_due = trim_due or (quiet_until is not None and not self._quiet)  # it went quiet
                self._quiet = quiet_until is not None
            if trim_due and quiet_until is not None:
                trim_due = False
                memtrim.trim()
            due = min(
                next_rules,
                never if stall_due is None else stall_due,
                next_heartbeat if quiet_until is None else max(next_heartbeat, quiet_until),
                next_gpu,
                next_keeper_check,
            )
            if self.deadline is not None:
                due = min(due, self.deadline)
            if self.journal.behind:
                due = min(due, next_retry)
            cap = self.IDLE_WAIT if self.requested is None and self.exit_status is None else TICK
            timeout = None if due == never else max(0.0, due - time.monotonic())
            if cap is not None:
                timeout = cap if timeout is None else min(timeout, cap)
            if self._wake.wait(timeout, keeper.fds() if keeper is not None else ()):
                next_keeper_check = 0.0  # the keeper ended: make sure another runs
        if keeper is not None:
            keeper.close()
        if self._notice_watch is not None:
            self._notice_watch.stop()
        self._output_done.set()
        if self._output_watch is not None:
            self._output_watch.wake()
        if self._reader is not None:
            # Every byte printed before the tree was gone is parsed, however many (a job that
            # printed millions of metric lines and exited): wait while the reader makes progress
            # towards the size output.log had then; only bytes written later (a process that
            # escaped the tree) may be left unread.
            try:
                target = os.stat(str(self.files.output)).st_size
            except OSError:
                target = 0
            while self._reader.is_alive() and self._read_pos < target:
                before = self._read_pos
                self._reader.join(timeout=DRAIN_STALL)
                if self._read_pos == before:
                    break  # no progress at all for DRAIN_STALL s: the reader is stuck
            self._stop_reading = True
            self._reader.join(timeout=DRAIN_STALL)
        if self._reader is not None and not self._reader.is_alive():
            self._heartbeat_pos = self._journaled_pos  # all parsed, no adopter to come: trim to the cap
            self._trim_output()
        if tensorboard is not None:
            tensorboard.finish()  # what the run flushed as it ended
        if logger_files is not None:
            logger_files.finish()
            self._journal_points([], self.logger_gate.final)  # printed values still held
        if self.container is not None:  # its processes are gone: the runtime's record of it goes too
            self.container.remove(self.journal.append)
        self._send_advice()  # what the last lines made (an OOM's traceback is a job's last words)
        self._write_final_state()

    def _looks_on_a_timer(self) -> bool:
        """What no signal announces: a budget's spend and an idle rule's window grow with time, a
        Slurm job's requests come from the login node (no signal reaches here), and an adopter's
        or a watch's command is no child (it polls anyway)."""
        return (
            bool(self.spec.get("placement"))
            or (self.autostop is not None and self.autostop.active)
            or not self.COMMAND_IS_CHILD
            or self.IDLE_WAIT is not None
        )

    def _journal_logged(self, points: List[Dict[str, Any]]) -> None:
        """Points from the logger's files, with the held printed values they release (gate.py)."""
        self._journal_points(points, self.logger_gate.logged)

    def _journal_points(self, points: List[Dict[str, Any]], gate: Any = None) -> None:
        """Points read from the run's TensorBoard event files, journaled as parsed output's are."""
        entries: List[Tuple[str, Dict[str, Any]]] = [("metric", {"values": v}) for v in points]
        with self._out_lock:
            if gate is not None:
                entries += gate(points)
            if not entries:
                return
            back = self.stall.saw(entries, time.monotonic())
            if back is not None:
                entries.append(("event", {"event": "unstalled", "data": {"why": back}}))
            assert self.journal is not None
            self.journal.append_many(entries)

    def _trim_output(self) -> None:
        """Keep output.log within the job's cap: head and tail stay, the parsed middle goes."""
        cap = self.output_cap
        if cap is None or self.journal is None:
            return
        end = cap.plan(self._heartbeat_pos)
        if end > cap.dropped_to or (self._gap_unsaid and cap.gap):
            end = max(end, cap.dropped_to)
            # Said before it is done: a reader that saw the journal never shows the hole's zeros.
            said = self.journal.append(
                "event",
                event="output_dropped",
                data={"from": cap.head, "to": end, "bytes": end - cap.head, "cap": cap.cap},
            )
            self._gap_unsaid = said is None  # a full disk: punch anyway (it frees room), say it later
            cap.punch(end)
        if cap.unsupported and not self._cap_unsupported_said:
            self._cap_unsupported_said = True
            self.journal.append("event", event="output_cap_unsupported", data={"reason": cap.unsupported})

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.proc is not None and pid == self.proc.pid:
                self.exit_status = status
                code, sig = decode_status(status)
                # Popen must not wait for a pid we already reaped.
                self.proc.returncode = code if code is not None else -signal_number(sig)

    def _apply_control(self) -> None:
        request = read_control(self.files.control)
        if self._kill_flag:
            request = ("kill", 0.0, request[2] if request else "user")
        if request is None:
            return
        action, grace, reason = request
        if action == "kill":
            if self.requested != "kill":
                self.requested, self.reason = "kill", reason
                self.deadline = time.monotonic()  # keep killing late forks until the tree is empty
                assert self.journal is not None  # run() opened it before the loop reads control
                self.journal.append("event", event="kill_requested", data={"reason": reason})
                kill_tree_until_gone(self.key, os.getpid(), own_subreaper=self._own_tree)
            return
        if self.requested == "kill":
            return
        deadline = time.monotonic() + grace
        if self.requested != "stop" or self.deadline is None:
            self.requested, self.reason = "stop", reason
            self._begin_stop(grace)
        elif deadline < self.deadline:
            self.deadline = deadline  # a second stop may only shorten the wait

    def _on_notice(self, notice: Dict[str, Any]) -> None:
        """The watch's thread, once: the file the job may read first, then the journal, then the loop."""
        assert self.journal is not None
        data = public(notice)
        unwritten = write_notice(self.files.dir, notice)
        if unwritten:
            data["notice_file_error"] = unwritten[:200]
        self.journal.append("event", event="preempted", data=data)
        self._notice_pending = notice
        self._control_flag.set()

    def _on_notice_error(self, message: str) -> None:
        assert self.journal is not None
        self.journal.append("event", event="notice_watch_error", data={"error": message})

    def _apply_notice(self) -> None:
        """A notice stops the job gracefully, its grace cut to end before the host goes; a stop
        already under way keeps its earlier deadline but its end says `preempted`."""
        notice, self._notice_pending = self._notice_pending, None
        if notice is None or self.exit_status is not None or self.requested not in (None, "stop"):
            return
        self.notice = public(notice)
        grace = notice_grace(float(self.spec.get("grace", DEFAULT_GRACE)), float(notice["at"]))
        self.reason = REASON
        if self.requested != "stop" or self.deadline is None:
            self.requested = "stop"
            self._begin_stop(grace)
        else:
            self.deadline = min(self.deadline, time.monotonic() + grace)

    def _drop_failed_node(self) -> None:
        """Elastic: this node's own workers failed; stop it (torchrun would rejoin it and fail again)
        and end it `failed` with that cause, so the others re-form without it."""
        if self.own_failure is not None and self.requested is None:
            self.requested, self.reason = "stop", DROPPED + self.own_failure[1]
            self._begin_stop()

    def _arm_resize_note(self) -> None:
        """A client's note of an elastic resize it started (`resizing` op): the next regroup's why."""
        note = read_resize_note(self.files.resize)
        if note is None:
            return
        try:
            os.unlink(str(self.files.resize))
        except OSError:
            return  # it would be read again and again: better no why than the same one twice
        with self._out_lock:
            self.elastic_resizes.arm(note)

    def _apply_autostop(self) -> None:
        if self.autostop is None or not self.autostop.active or self.requested is not None:
            return
        paused = read_paused(self.files.autostop)
        if paused is not None:
            self.autostop.set_paused(paused)
        reason = self.autostop.check()
        if reason:
            self.requested, self.reason = "stop", reason
            self._begin_stop()

    def _apply_stall(self) -> None:
        """A stall is journaled once (with the GPUs' utilisation: a hung collective reads 100 %),
        told to the job's notify targets, and stops the job when its action says so."""
        if self.proc is None or self.requested is not None:
            return
        with self._out_lock:
            found = self.stall.check(time.monotonic())
        if found is None:
            return
        if self._gpu_utils:
            found["gpu_util"] = self._gpu_utils
            found["why"] += "; GPUs at %s %%" % "/".join(str(u) for u in self._gpu_utils)
        assert self.journal is not None
        self.journal.append("event", event="stalled", data=found)
        said = notify_event(self.spec, "stalled", found["why"])
        if said is not None:
            self.journal.append("event", event="notified", data=said)
        if found["action"] in ("stop", "restart"):
            self.requested, self.reason = "stop", "stalled: %s" % found["why"]
            # restart: once its end is journaled, the same spec again (stall_restart.py)
            self._restart_after_stall = found["action"] == "restart"
            self._begin_stop()
        elif found["action"] == "dump":  # in a thread: py-spy may take seconds per process
            threading.Thread(target=self._dump_stalled, name="dump", daemon=True).start()

    def _dump_stalled(self) -> None:
        """The stall action `dump`: the stacks of the job's tree on this node, journaled `dumped`."""
        assert self.journal is not None
        pids = self._tree()
        from ..stacks.take import take_dump

        try:
            record = take_dump(self.files.dir, str(self.spec["id"]), str(self.spec.get("node", "0")), pids)
        except OSError as exc:  # a full disk: said, and the job goes on
            self.journal.append("event", event="dump_failed", data={"error": describe_os_error(exc)})
            return
        self.journal.append("event", event="dumped", data=event_data(record, "stall"))

    def _journal_dumps(self) -> None:
        """Dumps the `dump` op took (serving/dumpop.py) become `dumped` events here, the one writer."""
        assert self.journal is not None
        for data in take_notes(self.files.dir):
            self.journal.append("event", event="dumped", data=data)

    def _apply_pace_note(self) -> None:
        """A client named this node the straggler (or no longer), or a stall's likely hang."""
        note = take_note(self.files.pace_note)
        if note is None or self.journal is None:
            return
        for event, data in self.pace_notes.records(note):
            self.journal.append("event", event=event, data=data)

    def _tree(self) -> Set[int]:
        return job_tree(self.key, os.getpid(), own_subreaper=self._own_tree)

    def _begin_stop(self, grace: Optional[float] = None) -> None:
        assert self.journal is not None and self.proc is not None
        if grace is None:
            grace = float(self.spec.get("grace", DEFAULT_GRACE))
        self.deadline = time.monotonic() + grace
        self.journal.append("event", event="stop_requested", data={"grace": grace, "reason": self.reason})
        sig = getattr(signal, str(self.spec.get("stop_signal") or "SIGTERM"), signal.SIGTERM)
        if self.exit_status is None:
            # Only the command's own process: it forwards (python, torchrun do); a group-wide signal
            # would kill DataLoader workers before the trainer can checkpoint.
            signal_pids([self.proc.pid], sig)
        else:
            signal_pids(self._tree(), signal.SIGTERM)

    def _finished(self) -> bool:
        """Done means: the command ended and no live process of the tree remains."""
        if self.exit_status is None and self.requested != "stop":
            return False
        if self.exit_status is not None and self.requested is None and self._control_flag.is_set():
            self._control_flag.clear()  # a kill/stop that raced the command's end still counts
            self._apply_control()
        if self.exit_status is not None and self.requested is None:
            # The command ended by itself: what it left behind gets SIGTERM, then SIGKILL.
            self.requested, self.reason = "cleanup", None
            self.deadline = time.monotonic() + min(
                float(self.spec.get("grace", DEFAULT_GRACE)), LEFTOVER_GRACE
            )
            signal_pids(self._tree(), signal.SIGTERM)
        tree = self._tree()
        if not tree and self._own_tree:
            if self.exit_status is None and self._command_alive():
                return False  # not ending yet: the host-wide look below waits for the command's end
            # Before saying none is left, one look at the whole host for the job's marker: the
            # kernel's children lists are not reliable while a tree exits and is reparented
            # (proc(5)), and a process missed here outlived its stop (a setsid escapee, under load).
            tree = job_tree(self.key, os.getpid(), own_subreaper=False)
            self._own_tree = not tree  # one found: from here on its kills look host-wide too
            if tree and self.requested in ("stop", "cleanup"):
                # It missed the stop's signal (forked after it, or out of the group): asked now, not
                # left until the grace's end, with a host-wide look at every pass meanwhile.
                signal_pids(tree, signal.SIGTERM)
        if not tree:
            return self.exit_status is not None or not self._command_alive()
        if self.exit_status is not None:
            self.gpu_free.saw_leftovers(tree)  # what the command left behind, before it is killed
        if self.deadline is not None and time.monotonic() >= self.deadline:
            kill_tree_until_gone(self.key, os.getpid(), own_subreaper=self._own_tree)
        return False

    def _command_alive(self) -> bool:
        self._reap()
        return self.exit_status is None

    def _sample_gpus(self) -> None:
        if self._gpu is False:
            return
        from ..probes.jobgpus import sample_job_gpus

        tree = self._tree()
        try:
            gpus = sample_job_gpus(tree, self.spec)
        except Exception:
            gpus = None
        if self.autostop is not None:
            self.autostop.on_gpus(
                [g.get("util") for g in gpus] if gpus else None,
                None if gpus is not None else "no NVIDIA GPU on this host",
            )
        if gpus is None:
            self._gpu = False  # no driver: say nothing more, the host's hello says why
            return
        self._gpu_utils = [g.get("util") for g in gpus]
        self.gpu_free.saw_gpus(gpus)
        if gpus and self._health is None:
            # Made at the first sample with GPUs (not at import: a job on a host without GPUs
            # never pays for them); their first look, below, is the baseline.
            from ..probes.gpuhealth import HealthProbe
            from ..probes.jobcpu import JobCpu
            from ..probes.jobgpus import session

            self._health, self._cpu = HealthProbe(session()), JobCpu()
        now = time.monotonic()
        # Judged before the sample is journaled: the first look's health counts are the baseline
        # later errors are told against, and a reader that sees the job's first sample must find
        # that baseline taken (an error raised after it is the job's, never part of its baseline).
        self._advise_on_gpus(gpus, tree, now)
        assert self.journal is not None
        if gpus and self.steady.gpu_due(gpus, now) and self.journal.append("gpu", gpus=gpus) is not None:
            self.steady.gpu_written(gpus, now)

    def _advise_on_gpus(self, gpus: List[Dict[str, Any]], tree: Any, now: float) -> None:
        """The loader's and the GPUs' health judgements, on each look at the job's GPUs."""
        if not gpus or self._health is None or self._cpu is None:
            return  # (both are made at the first sample with GPUs: _sample_gpus)
        from ..probes.jobcpu import cores_available

        try:
            health = self._health.look()
        except Exception:  # a probe's bug must never stop the supervision
            health = None
        cpu = self._cpu.look(tree, now)
        with self._out_lock:
            entries = self.advice.gpus(gpus, cpu, cores_available(), health)
        if entries:
            assert self.journal is not None
            self.journal.append_many(entries)
        self._tell_advice(entries)

    def _tell_advice(self, entries: List[Tuple[str, Dict[str, Any]]]) -> None:
        """Queued for the loop: telling goes over the network, never from the output's reader."""
        self._untold.extend(str(body["data"]["why"]) for _, body in entries)
        if entries:
            self._control_flag.set()  # the loop's next pass tells them (it sleeps until woken)

    def _send_advice(self) -> None:
        """Each advice told to the job's notify targets when it asked for `advice` (node 0's, as a stall)."""
        while self._untold:
            said = notify_event(self.spec, "advice", self._untold.popleft())
            if said is not None:
                assert self.journal is not None
                self.journal.append("event", event="notified", data=said)

    def _write_final_state(self) -> None:
        assert self.journal is not None
        exit_code, sig = decode_status(self.exit_status)
        if self.own_failure is not None and self.requested != "kill":
            state, exit_code, sig = (
                "failed",
                self.own_failure[0],
                None,
            )  # its workers' code, not torchrun's after the stop
        elif self.requested == "kill":
            state = "killed"
        elif self.requested == "stop":
            state = "stopped"
        elif exit_code == 0:
            state = "exited"
        else:
            state = "failed"
        fields: Dict[str, Any] = {"state": state, "exit_code": exit_code, "signal": sig}
        if self.requested in ("kill", "stop"):
            fields["reason"] = self.reason
        if self.notice is not None and self.reason == REASON:
            fields["notice"] = self.notice  # provider, action, time (the host goes), seen_at
        if state == "failed":
            tail: List[str] = list(self.tail)
            fields["tail"] = tail
            mn = self.spec.get("multinode")
            hints = mn.get("hints") if isinstance(mn, dict) else None
            fields["cause"] = (
                self.own_failure[1]
                if self.own_failure is not None
                else (self.container and self.container.cause(exit_code, tail))
                or failure_cause(
                    exit_code, sig, tail, hints if isinstance(hints, list) else None, self.last_exception.last
                )
            )
        fields.update(self.gpu_free.end_fields(self.journal.append))
        fields.update(hold.end_fields(self.spec, state, time.time()))
        self.journal.append("state", **fields)
        if self._restart_after_stall and state == "stopped":  # its end is journaled: its GPUs are free
            from .stall_restart import relaunch

            relaunch(self.files.dir.parent.parent.parent, self.spec, self.journal.append)
        self._notify(fields)
        self._flush_journal()

    def _notify(self, end: Dict[str, Any]) -> None:
        """Tell the job's `notify` targets of this end, once (the end is written once); the outcome
        is journaled without the URLs (they may hold tokens)."""
        assert self.journal is not None
        said = notify_end(self.spec, end)
        if said is not None:
            self.journal.append("event", event="notified", data=said)

    def _flush_journal(self) -> None:
        """A full disk: the final state is kept in memory; hold the lock (the job is not `lost`)
        and write it, after a disk_full note, as soon as the disk has room -- for a while only: a
        disk that never frees must not keep a supervisor and its lock for ever. Gone, it leaves a
        job with no process and no end: the next look journals its end then, from control.json
        (what was asked) when there is room (adoption.py)."""
        assert self.journal is not None
        give_up = time.monotonic() + journal_give_up()
        while not self.journal.retry() and time.monotonic() < give_up:
            time.sleep(JOURNAL_RETRY)
        self.journal.close()


def journal_give_up() -> float:
    """Seconds a supervisor whose job is over waits for room to journal its end (tests shorten it)."""
    try:
        return max(0.0, float(os.environ.get(JOURNAL_GIVE_UP_VAR, JOURNAL_GIVE_UP)))
    except ValueError:
        return JOURNAL_GIVE_UP


def signal_number(name: Optional[str]) -> int:
    return int(getattr(signal, name, 0)) if name else 0


def decode_status(status: Optional[int]) -> Tuple[Optional[int], Optional[str]]:
    if status is None:
        return None, None
    if os.WIFSIGNALED(status):
        return None, signal_name(os.WTERMSIG(status))
    return os.WEXITSTATUS(status), None
