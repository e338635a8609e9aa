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
from typing import Any, Dict, List, Optional, Tuple

from ..jobstate import TERMINAL_STATES, JobView
from ..names import is_job_id, is_node
from ..storage.files import ensure_private_dir, write_private_atomic
from ..storage.jsonio import dumps
from ..storage.layout import JobFiles, iter_job_dirs, job_dir
from ..supervision.control import write_control
from ..supervision.jobspec import SpecError, load_spec, validate_spec
from ..supervision.launcher import spawn_supervisor
from ..supervision.orphan import end_orphaned_job, record_failed_start
from ..supervision.proctree import is_live

LAUNCH_WAIT = 15.0
STOP_MARGIN = 30.0


class JobError(Exception):
    """A request about a job that cannot be done; the message is the one-line answer."""


class JobTable:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._views: Dict[Tuple[str, str], JobView] = {}
        self._lock = threading.Lock()

    def view(self, job: Any, node: Any) -> JobView:
        if not is_job_id(job):
            raise JobError("job: not a job id: %r" % (job,))
        node = "0" if node is None else node
        if not is_node(node):
            raise JobError("node: not a node name: %r" % (node,))
        directory = job_dir(self.root, job, node)
        with self._lock:
            existing = self._views.get((job, node))
            if existing is None:
                if not directory.is_dir():
                    raise JobError("unknown job %s (node %s)" % (job, node))
                existing = self._views[(job, node)] = JobView(job, node, directory)
        return existing

    def list(self) -> List[Dict[str, Any]]:
        objects = []
        for job, node, _ in iter_job_dirs(self.root):
            try:
                objects.append(self.view(job, node).refresh())
            except JobError:
                continue  # removed while we listed
        objects.sort(key=lambda o: o["id"], reverse=True)
        return objects

    def launch(self, raw_spec: Any) -> Dict[str, Any]:
        try:
            spec = validate_spec(raw_spec)
        except SpecError as exc:
            raise JobError(str(exc)) from None
        spec.setdefault("created_at", time.time())
        directory = job_dir(self.root, spec["id"], spec["node"])
        ensure_private_dir(directory.parent)
        try:
            os.mkdir(str(directory), 0o700)
        except FileExistsError:
            raise JobError("job %s node %s already exists" % (spec["id"], spec["node"])) from None
        files = JobFiles(directory)
        write_private_atomic(files.spec, dumps(spec).encode("utf-8"))
        pid = spawn_supervisor(directory, files.supervisor_log)
        view = self.view(spec["id"], spec["node"])
        deadline = time.monotonic() + LAUNCH_WAIT
        while time.monotonic() < deadline:
            obj = view.refresh()
            if obj["state"] != "starting":
                return obj
            if not is_live(pid) and not view.refresh()["supervisor_pid"]:
                cause = "the supervisor died at start: %s" % _last_line(files.supervisor_log)
                record_failed_start(files, cause)
                raise JobError(cause)
            time.sleep(0.02)
        return view.refresh()

    def restart(self, job: Any, node: Any, new_id: Any) -> Dict[str, Any]:
        view = self.view(job, node)
        try:
            spec = load_spec(view.files.spec)
        except (OSError, ValueError) as exc:
            raise JobError("job %s: unreadable spec: %s" % (job, exc)) from None
        if view.refresh()["state"] not in TERMINAL_STATES:
            raise JobError("job %s is %s: stop it before restarting" % (job, view.current_state()))
        spec.update(id=new_id, restart_of=job, created_at=time.time())
        return self.launch(spec)

    def end(self, job: Any, node: Any, action: str, grace: Optional[float], reason: Any = None) -> Dict[str, Any]:
        """Stop or kill; answers once no process of the job's tree is left.

        `reason` says who or what asked (default "user"), e.g. a fleet budget: it lands in the journal."""
        if reason is not None and not (isinstance(reason, str) and 0 < len(reason) <= 200 and reason.isprintable()):
            raise JobError("reason: expected up to 200 printable characters, got %r" % (reason,))
        view = self.view(job, node)
        obj = view.refresh()
        if obj["state"] in TERMINAL_STATES:
            return obj
        spec = view.spec or {}
        if grace is None:
            grace = float(spec.get("grace", 60.0))
        if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
            raise JobError("grace: expected seconds >= 0, got %r" % (grace,))
        write_control(view.files.control, action, float(grace), reason or "user")
        supervisor = view.fields["supervisor_pid"]
        if obj["state"] != "lost" and isinstance(supervisor, int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(supervisor, signal.SIGUSR1)
        deadline = time.monotonic() + (grace if action == "stop" else 0) + STOP_MARGIN
        while time.monotonic() < deadline:
            obj = view.refresh()
            if obj["state"] in TERMINAL_STATES:
                return obj
            if obj["state"] == "lost" and spec:
                end_orphaned_job(view.files, spec, view.fields["pid"], action, float(grace))
                continue
            time.sleep(0.05)
        raise JobError("job %s did not end within %.0f s of the %s request" % (job, grace + STOP_MARGIN, action))

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

    def logs(self, job: Any, node: Any, offset: Any, limit: Any) -> Dict[str, Any]:
        view = self.view(job, node)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise JobError("offset: expected a byte offset >= 0, got %r" % (offset,))
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= 16 << 20:
            raise JobError("limit: expected 1..16777216 bytes, got %r" % (limit,))
        # Read `done` first: when it says over, every byte of output is already in the file.
        state = view.refresh()["state"]
        done = state in TERMINAL_STATES or state == "lost"
        try:
            with open(str(view.files.output), "rb") as f:
                f.seek(offset)
                data = f.read(limit)
                size = os.fstat(f.fileno()).st_size
        except FileNotFoundError:
            data, size = b"", 0
        return {"offset": offset, "data": base64.b64encode(data).decode("ascii"), "size": size, "done": done}

    def remove(self, job: Any, node: Any) -> Dict[str, Any]:
        view = self.view(job, node)
        state = view.refresh()["state"]
        if state not in TERMINAL_STATES:
            raise JobError("job %s is %s: stop or kill it before removing" % (job, state))
        shutil.rmtree(str(view.files.dir), ignore_errors=True)
        with self._lock:
            self._views.pop((job, node or "0"), None)
        with contextlib.suppress(OSError):  # other nodes of the job are still here
            os.rmdir(str(view.files.dir.parent))
        return {"removed": job}


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text("utf-8", "replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "no output"
