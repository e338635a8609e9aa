"""The jobs in an agent dir: launching, listing, stopping, reading logs. Used by serve's ops."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional

from ..codestore.store import CodeStore
from ..containers.fields import pin_image
from ..containers.supervised import ContainerJob
from ..datafetch.urls import UrlsError, check_urls, write_urls
from ..gpus.assign import GpuShortage, assign, with_assignment
from ..jobstate import TERMINAL_STATES, JobView
from ..names import is_job_id, is_node
from ..probes.gpu import default as default_nvml
from ..slurm.commands import SlurmError
from ..slurm.control import SlurmControlError, end_slurm_job
from ..slurm.record import note_refused
from ..slurm.states import SlurmLook, is_slurm
from ..slurm.submit import node_names, submit
from ..spec import DEFAULT_GRACE
from ..storage.files import describe_os_error, ensure_private_dir, write_private_atomic
from ..storage.jsonio import dumps, loads_object
from ..storage.layout import JobFiles, job_dir
from ..supervision.control import KILL_SIGNAL, make_control_slot, write_control
from ..supervision.jobspec import SpecError, job_key, load_spec, validate_spec
from ..supervision.launcher import spawn_supervisor
from ..supervision.orphan import end_orphaned_job, record_failed_start
from ..supervision.pace_note import checked_why, write_note
from ..supervision.proctree import (
    is_live,
    job_tree,
    kill_tree_until_gone,
    process_state,
    signal_pids,
    stat_fields,
)
from ..supervision.watchspec import is_watch, refuse_read_only, validate_watch_spec, watched_tree
from .deletedjobs import end_deleted
from .jobreader import JobError as JobError  # re-exported: serve and dumpop catch it from here
from .jobreader import JobReader
from .stuck import launch_interrupted, runs_dir
from .transition import forget_job_dir

LAUNCH_WAIT = 15.0
STOP_MARGIN = 30.0
FROZEN_AFTER = 1.0  # a supervisor stopped (SIGSTOP) this long is taken over
JOURNAL_WAIT = 3.0
GONE_SUFFIX = "+gone"  # a node dir being removed: not a node name, so no reader lists it
RESTARTED_NAME = "restarted.json"  # in an ended job's dir: the job its restart created  # the tree is gone: how long the journal may take to say so


class JobTable(JobReader):
    """An agent dir's jobs: the listing (jobreader.py), and launching, stopping, reading logs."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._slurm_ends: Dict[str, threading.Lock] = {}

    def launch(self, raw_spec: Any, data_urls: Any = None) -> Dict[str, Any]:
        """`data_urls`: the presigned URLs of the spec's data (datafetch/urls.py), kept beside it."""
        try:
            spec = validate_watch_spec(raw_spec) if is_watch(raw_spec) else validate_spec(raw_spec, self.root)
            urls = check_urls(data_urls, len(spec.get("data") or []))
        except (SpecError, UrlsError) as exc:
            raise JobError(str(exc)) from None
        code = spec.get("code")
        if isinstance(code, dict) and not CodeStore(self.root).has_snapshot(code["snapshot"], touch=True):
            raise JobError("spec.code.snapshot: not on this host (sync it first: gpudeck sync)")
        spec.setdefault("created_at", time.time())
        if is_slurm(spec):
            return self._submit_slurm(spec)
        directory = job_dir(self.root, spec["id"], spec["node"])
        ensure_private_dir(directory.parent)
        try:
            os.mkdir(str(directory), 0o700)
        except FileExistsError:
            raise JobError("job %s node %s already exists" % (spec["id"], spec["node"])) from None
        files = JobFiles(directory)
        try:
            if spec.get("gpus"):  # its GPUs, chosen under the host's lock before anything starts
                spec["env"] = with_assignment(
                    spec.get("env") or {}, assign(self.root, directory, spec["gpus"], default_nvml())
                )
            write_private_atomic(files.spec, dumps(spec).encode("utf-8"))
            if urls:
                write_urls(directory, urls)
            make_control_slot(files.control)  # stop and kill must reach it later on a full disk
            pid = spawn_supervisor(directory, files.supervisor_log)
        except GpuShortage as exc:
            self._forget(spec["id"], spec["node"], directory)
            raise JobError(str(exc)) from None
        except OSError as exc:
            # Nothing started: leave nothing behind (no phantom `starting` job).
            self._forget(spec["id"], spec["node"], directory)
            raise JobError("could not launch job %s: %s" % (spec["id"], describe_os_error(exc))) from None
        view = self.view(spec["id"], spec["node"])
        deadline = time.monotonic() + LAUNCH_WAIT
        while time.monotonic() < deadline:
            obj = view.refresh()
            if obj["state"] != "starting":
                return obj
            if not is_live(pid) and not view.refresh()["supervisor_pid"]:
                cause = "the supervisor died at start: %s" % _last_line(files.supervisor_log)
                record_failed_start(files, cause)
                if view.refresh()["last_seq"] == 0:  # not even that could be written: nothing to keep
                    self._forget(spec["id"], spec["node"], directory)
                raise JobError(cause)
            time.sleep(0.02)
        return view.refresh()

    def _submit_slurm(self, spec: Dict[str, Any]) -> Dict[str, Any]:
        """A Slurm placement: every node's dir made here, the allocation asked of sbatch (slurm/)."""
        try:
            submit(self.root, spec)
        except FileExistsError:
            raise JobError("job %s already exists" % spec["id"]) from None
        except SlurmError as exc:
            if is_job_id(spec.get("restart_of")):  # the old job's record says its restart was refused
                note_refused(self.root, spec["restart_of"], spec["id"], str(exc))
            raise JobError("could not submit job %s to Slurm: %s" % (spec["id"], exc)) from None
        except OSError as exc:
            raise JobError("could not submit job %s: %s" % (spec["id"], describe_os_error(exc))) from None
        return dict(self._fold(spec["id"], "0", SlurmLook()), nodes=node_names(spec))

    def _forget(self, job: str, node: str, directory: Path) -> None:
        # Renamed away first, in one step: a restart racing us finds no dir to leave a marker in
        # (a dir holding only restarted.json was a ghost `starting` job that rm refused).
        doomed = directory.with_name(directory.name + GONE_SUFFIX)
        try:
            os.rename(str(directory), str(doomed))
        except OSError:
            doomed = directory
        shutil.rmtree(str(doomed), ignore_errors=True)
        with self._lock:
            self._views.pop((job, node), None)
        forget_job_dir(directory.parent)

    def restart(
        self,
        job: Any,
        node: Any,
        new_id: Any,
        as_node: Any = None,
        changes: Any = None,
        data_urls: Any = None,
    ) -> Dict[str, Any]:
        """`as_node` and `changes` serve a resize (`gpudeck scale`): the new job's node name, and
        spec fields replaced (env: merged) -- the old spec's env values never leave the host.
        `data_urls`: fresh URLs for the spec's data (without them only cached objects can be used)."""
        view = self.view(job, node)
        try:
            spec = load_spec(view.files.spec)
        except FileNotFoundError:  # removed (`gpudeck rm`) since this server first looked at it
            raise JobError(
                "job %s (node %s) is no longer on this host: it was removed" % (job, node)
            ) from None
        except (OSError, ValueError) as exc:
            raise JobError("job %s: unreadable spec: %s" % (job, exc)) from None
        if is_watch(spec):
            raise JobError(
                "job %s is a watch of %s: restart is not offered (watch the file again)"
                % (job, spec["watch"].get("path"))
            )
        if is_slurm(spec) and str(spec.get("node", "0")) != "0":
            raise JobError("job %s ran on Slurm: restart it from node 0 (one allocation for all)" % job)
        if view.refresh()["state"] not in TERMINAL_STATES:
            raise JobError("job %s is %s: stop it before restarting" % (job, view.current_state()))
        if not is_job_id(new_id):
            raise JobError("new_id: not a job id: %r" % (new_id,))
        changes = _restart_changes(changes)
        if "slurm_nodes" in changes:
            spec = slurm_resized(spec, changes.pop("slurm_nodes"))
        if as_node is not None:
            if not is_node(as_node):
                raise JobError("as_node: not a node name: %r" % (as_node,))
            changes["node"] = as_node
        # Once only: the marker (O_EXCL) names the job the first restart made, so a second
        # restart, concurrent or later, is refused naming it instead of starting another copy.
        marker = view.files.dir / RESTARTED_NAME
        if changes.get("node", spec.get("node", "0")) != spec.get("node", "0"):
            # a resize starts several new nodes from one old node: one marker per new node
            marker = view.files.dir / ("restarted-%s.json" % changes["node"])
        try:
            fd = os.open(str(marker), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            raise JobError("job %s was already restarted as %s" % (job, _restarted_as(marker))) from None
        except OSError as exc:
            raise JobError(
                "job %s: could not record the restart: %s" % (job, describe_os_error(exc))
            ) from None
        try:
            try:
                os.write(fd, dumps({"restarted_as": new_id, "t": time.time()}).encode("utf-8"))
            finally:
                os.close(fd)
            env = dict(spec.get("env") or {}, **changes.pop("env", {}))
            if isinstance(changes.get("resized_from"), dict):
                # the old node's last step, on this host's clock: the new supervisor's `resized`
                # record says how long training paused from it to the first step at the new size
                last = last_metric_at(view.files.journal)
                if last is not None:
                    changes["resized_from"] = dict(changes["resized_from"], last_step_at=last)
            spec.update(changes)
            spec.update(id=new_id, restart_of=job, created_at=time.time(), env=env)
            pin_image(spec, view.fields.get("container"))  # the same image bytes as the job ran
            return self.launch(spec, data_urls)
        except (OSError, JobError) as exc:
            with contextlib.suppress(OSError):  # it did not happen: a later restart may try again
                os.unlink(str(marker))
            if isinstance(exc, JobError):
                raise
            raise JobError(
                "job %s: could not record the restart: %s" % (job, describe_os_error(exc))
            ) from None

    def end(
        self, job: Any, node: Any, action: str, grace: Optional[float], reason: Any = None
    ) -> Dict[str, Any]:
        """Stop or kill; answers once no process of the job's tree is left.

        Signals first, files after: a kill SIGKILLs the tree itself before anything is written, and
        neither depends on writing a file (a full disk) nor on the supervisor answering (frozen or
        dead: the agent takes over). `reason` says who or what asked (default "user")."""
        if reason is not None and not (
            isinstance(reason, str) and 0 < len(reason) <= 200 and reason.isprintable()
        ):
            raise JobError("reason: expected up to 200 printable characters, got %r" % (reason,))
        try:
            view = self.view(job, node)
        except JobError:
            ended = end_deleted(self.root, job, node, action, grace, reason)
            if ended is None:
                raise
            return ended
        obj = view.refresh()
        if obj["state"] in TERMINAL_STATES:
            return dict(obj, already_ended=True)  # nothing was done: the answer says so
        spec = view.spec or {}
        if is_slurm(spec):
            return self._end_slurm(view, action, grace, reason)
        refusal = refuse_read_only(spec, action)
        if refusal:
            raise JobError(refusal)
        if grace is None:
            grace = float(spec.get("grace", DEFAULT_GRACE))
        if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace < float("inf"):
            raise JobError("grace: expected seconds >= 0, got %r" % (grace,))
        key = job_key(spec) if spec.get("id") else None
        supervisor = own_supervisor(view)
        if key is None and supervisor is None:
            return obj  # no spec and no supervisor: it never started, nothing can be running
        if supervisor is None and launch_interrupted(view, key, LAUNCH_WAIT + STOP_MARGIN):
            return view.refresh()  # its end is journaled now: `rm` takes it
        try:
            write_control(view.files.control, action, float(grace), reason or "user")
            wake = signal.SIGUSR1
        except (
            OSError
        ):  # no room for control.json nor a slot (an older job): the signal alone says what to do
            wake = KILL_SIGNAL if action == "kill" else signal.SIGTERM
        if supervisor is None and view.refresh()["state"] not in TERMINAL_STATES:
            # Looked again after the request is written: a supervisor journals its pid before its
            # first read of control.json, and no timer reads it again (issue 33), so one that
            # appeared since the first look is told now, or has read the request already.
            supervisor = own_supervisor(view)
        # Its tree walks skip the host-wide look when it is the command's parent: asked before it is
        # woken (an idle supervisor acts at once, and a command it has reaped has no parent to read).
        own_tree = _parent_of_command(view, supervisor)
        if supervisor is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(supervisor, wake)
        if action == "kill" and key:
            kill_tree_until_gone(
                key, supervisor, own_subreaper=own_tree
            )  # ourselves: a frozen or busy supervisor cannot delay it
            signal_pids(watched_tree(spec), signal.SIGKILL)  # a watch job's --pid tree (else none)
        deadline = time.monotonic() + (grace if action == "stop" else 0) + STOP_MARGIN
        frozen_since: Optional[float] = None
        gone_since: Optional[float] = None
        orphan_done = False
        next_tree_check = 0.0
        while time.monotonic() < deadline:
            obj = view.refresh()
            now = time.monotonic()
            if obj["state"] in TERMINAL_STATES:
                return obj
            if obj["state"] == "lost" and key and not orphan_done:
                orphan_done = end_orphaned_job(view.files, spec, view.fields["pid"], action, float(grace))
                continue
            if supervisor is None and obj["state"] != "lost":
                # A new supervisor adopted the job meanwhile: it reads control.json; wake it.
                supervisor = own_supervisor(view)
                own_tree = False  # an adopter: what is left of the job is not below it
                if supervisor is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(supervisor, wake)
            if supervisor is not None and process_state(supervisor) in ("T", "t"):
                frozen_since = frozen_since or now
                if now - frozen_since >= FROZEN_AFTER:
                    # A frozen supervisor cannot act: end it; the job is then lost, and ours.
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(supervisor, signal.SIGKILL)
                    wait_gone(supervisor)
                    supervisor = None
                    continue
            else:
                frozen_since = None
            if key and now >= next_tree_check:
                next_tree_check = now + 0.25
                if job_tree(key, supervisor, own_tree and supervisor is not None) or watched_tree(spec):
                    gone_since = None
                else:
                    gone_since = gone_since or now
                    if orphan_done or now - gone_since >= JOURNAL_WAIT:
                        return _ended_unjournaled(obj, action, view)
            time.sleep(0.05)
        raise JobError(
            "job %s did not end within %.0f s of the %s request" % (job, grace + STOP_MARGIN, action)
        )

    def _end_slurm(self, view: JobView, action: str, grace: Optional[float], reason: Any) -> Dict[str, Any]:
        spec = view.spec or {}
        grace = float(spec.get("grace", DEFAULT_GRACE)) if grace is None else grace
        if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace < float("inf"):
            raise JobError("grace: expected seconds >= 0, got %r" % (grace,))
        job = view.fields["id"]

        def fold(node: str) -> Dict[str, Any]:
            return self._fold(job, node, SlurmLook())

        with self._lock:
            job_lock = self._slurm_ends.setdefault(job, threading.Lock())
        try:
            with job_lock:  # the client stops every node at once: one of them acts for the whole job
                return end_slurm_job(
                    view.files.dir.parent, view.fields["node"], action, float(grace), reason or "user", fold
                )
        except SlurmControlError as exc:
            raise JobError(str(exc)) from None

    def set_autostop(self, job: Any, node: Any, paused: Any) -> Dict[str, Any]:
        if not isinstance(paused, bool):
            raise JobError("paused: expected true or false, got %r" % (paused,))
        view = self.view(job, node)
        obj = view.refresh()
        if obj["state"] in TERMINAL_STATES:
            raise JobError("job %s is %s: nothing to pause" % (job, obj["state"]))
        write_private_atomic(view.files.autostop, dumps({"paused": paused}).encode("utf-8"))
        if isinstance(view.fields["supervisor_pid"], int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(view.fields["supervisor_pid"], signal.SIGUSR1)
        return {"paused": paused}

    def note_resize(self, job: Any, node: Any, before: Any, after: Any, why: Any) -> Dict[str, Any]:
        """An elastic resize the client started: the node's supervisor gives the next regroup's
        `resized` record this why, if its output carries rank 0 then (supervision/elastic_resize.py;
        the client tells every running node)."""
        counts = [
            v
            for v in (before, after)
            if not (isinstance(v, int) and not isinstance(v, bool) and 0 < v < 10000)
        ]
        if counts:
            raise JobError("from, to: expected node counts, got %r" % (counts[0],))
        if not (isinstance(why, str) and 0 < len(why) <= 300 and why.isprintable()):
            raise JobError("why: expected up to 300 printable characters, got %r" % (why,))
        view = self.view(job, node)
        obj = view.refresh()
        if obj["state"] in TERMINAL_STATES:
            raise JobError("job %s is %s: nothing resizes" % (job, obj["state"]))
        write_private_atomic(
            view.files.resize, dumps({"from": before, "to": after, "why": why}).encode("utf-8")
        )
        if isinstance(view.fields["supervisor_pid"], int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(view.fields["supervisor_pid"], signal.SIGUSR1)
        return {"noted": True}

    def note_pace(self, job: Any, node: Any, straggler: Any, hang: Any) -> Dict[str, Any]:
        """A client's straggler / likely-hang judgement of this node, for its supervisor to journal
        (supervision/pace_note.py): no supervisor sees the other hosts' nodes."""
        try:
            straggler, hang = checked_why(straggler, "straggler"), checked_why(hang, "hang")
        except ValueError as exc:
            raise JobError(str(exc)) from None
        view = self.view(job, node)
        if view.refresh()["state"] in TERMINAL_STATES:
            raise JobError("job %s is %s: nothing to note" % (job, view.fields["state"]))
        write_note(view.files.pace_note, straggler, hang)
        if isinstance(view.fields["supervisor_pid"], int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(view.fields["supervisor_pid"], signal.SIGUSR1)
        return {"noted": True}

    def logs(self, job: Any, node: Any, offset: Any, limit: Any) -> Dict[str, Any]:
        view = self.view(job, node)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise JobError("offset: expected a byte offset >= 0, got %r" % (offset,))
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= 16 << 20:
            raise JobError("limit: expected 1..16777216 bytes, got %r" % (limit,))
        done = self.output_done(view)  # first: when it says over, every byte of output is already in the file
        try:
            with open(str(view.files.output), "rb") as f:
                f.seek(offset)
                data = f.read(limit)
                size = os.fstat(f.fileno()).st_size
        except FileNotFoundError:
            data, size = b"", 0
        # The output cap's hole (read after the bytes: it is journaled before it is punched) is never
        # sent as its zeros: the data stops at it, and `gap` tells the reader where to go on.
        gap = view.refresh()["output_gap"]
        data = clip_to_gap(data, offset, gap)
        return {
            "offset": offset,
            "data": base64.b64encode(data).decode("ascii"),
            "size": size,
            "done": done,
            "gap": gap,
        }

    @staticmethod
    def output_done(view: JobView) -> bool:
        """Whether the job's output is complete (it is over: nothing more will be written)."""
        state = view.refresh()["state"]
        return state in TERMINAL_STATES or state == "lost"

    def remove(self, job: Any, node: Any) -> Dict[str, Any]:
        view = self.view(job, node)
        state = view.refresh()["state"]
        # A lost job none of whose processes is left (e.g. its end could not be journaled on a
        # full disk) has nothing to stop: it may go too.
        if state == "starting" and launch_interrupted(
            view, job_key(view.spec) if view.spec else None, LAUNCH_WAIT + STOP_MARGIN
        ):
            state = view.refresh()["state"]
        if (
            state not in TERMINAL_STATES
            and not (state == "lost" and not _tree_left(view))
            and not _never_started(view)
        ):
            raise JobError("job %s is %s: stop or kill it before removing" % (job, state))
        held = view.fields.get("held_until")
        if isinstance(held, (int, float)) and held > time.time():  # --hold-on-fail (supervision/hold.py)
            raise JobError(
                "job %s is held for debugging: `gpudeck stop` it (lets it go) before removing" % job
            )
        container = ContainerJob.of(view.spec or {})
        if container is not None:  # nothing of the job is left in the runtime either
            container.remove()
        self._forget(view.fields["id"], view.fields["node"], view.files.dir)
        return {"removed": job}


def clip_to_gap(data: bytes, offset: int, gap: Any) -> bytes:
    """The bytes read at offset, without any of the dropped [from, to)."""
    if not gap:
        return data
    start, end = gap
    if offset < start:
        return data[: start - offset]
    return data if offset >= end else b""


LAST_METRIC_SCAN = 1 << 20


def last_metric_at(journal: Path) -> Optional[float]:
    """The host time of a journal's last metric record (its last MiB is read), or None."""
    try:
        with open(str(journal), "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - LAST_METRIC_SCAN))
            lines = f.read().split(b"\n")
    except OSError:
        return None
    for raw in reversed(lines):
        if b'"metric"' not in raw and b'"points"' not in raw:
            continue
        record = loads_object(raw.decode("utf-8", "replace"))
        # a burst's dense `points` line carries its points' one time
        t = record.get("t") if record is not None and record.get("kind") in ("metric", "points") else None
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            return float(t)
    return None


def _restarted_as(marker: Path) -> str:
    """The new job's id from a restart marker; a marker still being written is a restart under way."""
    for _ in range(50):
        try:
            body = loads_object(marker.read_text("utf-8"))
        except (OSError, UnicodeDecodeError):
            body = None
        new_id = body.get("restarted_as") if body else None
        if isinstance(new_id, str) and is_job_id(new_id):
            return new_id
        time.sleep(0.01)
    return "another job (a restart is under way)"


def _never_started(view: JobView) -> bool:
    """A node dir without a spec (launch writes it before anything starts): what a removal racing a
    restart left; nothing of it runs, so it may go."""
    return not view.files.spec.exists() and own_supervisor(view) is None


def _tree_left(view: JobView) -> bool:
    spec = view.spec or {}
    return bool(spec.get("id")) and bool(job_tree(job_key(spec), None))


def own_supervisor(view: JobView) -> Optional[int]:
    """The job's supervisor pid when that process is alive and is this job's `run` (never a pid reused
    by someone else: its descendants are signalled)."""
    pid = view.fields.get("supervisor_pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0 or not is_live(pid):
        return None
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read().split(b"\0")
    except OSError:
        return None
    return pid if str(view.files.dir).encode() in cmdline or runs_dir(pid, cmdline, view.files.dir) else None


def _parent_of_command(view: JobView, supervisor: Optional[int]) -> bool:
    """The live supervisor is its command's parent: the job's own supervisor, the subreaper every
    process of the job stays below (an adopter or a watch is not its command's parent)."""
    pid = view.fields.get("pid")
    if supervisor is None or isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    fields = stat_fields(pid)
    return fields is not None and len(fields) > 1 and fields[1] == str(supervisor).encode()


def wait_gone(pid: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while is_live(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _ended_unjournaled(obj: Dict[str, Any], action: str, view: JobView) -> Dict[str, Any]:
    """No process of the tree is left but the journal does not say so yet (its disk is full, or the
    supervisor is catching up): the answer says what happened and why the journal is behind."""
    out = dict(obj)
    out["state"] = "killed" if action == "kill" else "stopped"
    out["reason"] = out.get("reason") or "user"
    out["cause"] = (
        "ended; its journal does not say so yet (the supervisor is still reading the output, or the disk is full)"
    )
    out["journal_behind"] = True  # `ps` shows the journal's state until it catches up
    return out


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text("utf-8", "replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "no output"


RESTART_CHANGES = ("argv", "env", "multinode", "resized_from", "data", "slurm_nodes")


def slurm_resized(spec: Dict[str, Any], nodes: Any) -> Dict[str, Any]:
    """A Slurm job's spec asking a new allocation of `nodes` nodes (restart's `slurm_nodes`)."""
    if not is_slurm(spec):
        raise JobError("changes.slurm_nodes: job %s is not a Slurm job" % spec.get("id"))
    if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= 4096:
        raise JobError("changes.slurm_nodes: expected a node count 1..4096, got %r" % (nodes,))
    return dict(spec, placement=dict(spec["placement"], nodes=nodes))


def _restart_changes(changes: Any) -> Dict[str, Any]:
    """The spec fields a restart may replace (launch validates their values)."""
    if changes is None:
        return {}
    if not isinstance(changes, dict) or not set(changes) <= set(RESTART_CHANGES):
        raise JobError("changes: expected an object with some of %s" % ", ".join(RESTART_CHANGES))
    if "env" in changes and not isinstance(changes["env"], dict):
        raise JobError("changes.env: expected an object of string to string")
    return dict(changes)
