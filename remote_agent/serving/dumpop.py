"""The `dump` op (issue 34): the stacks of every Python process of a job's live tree on this node
(stacks/take.py), saved in the node's directory and answered; `show`: the latest saved one, taken
nothing. The supervisor journals the dump as a `dumped` event (a note it picks up: it is the
journal's one writer)."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any, Dict

from ..jobstate import TERMINAL_STATES
from ..stacks.notes import write_note
from ..stacks.take import latest, take_dump
from .jobs import JobError, own_supervisor
from .procview import job_pids

MAX_SHOWN = 16 << 20  # bytes of a saved dump answered


def dump(req: Dict[str, Any], jobs: Any) -> Dict[str, Any]:
    view = jobs.view(req.get("job"), req.get("node"))
    show = req.get("show", False)
    if not isinstance(show, bool):
        raise JobError("show: expected true or false, got %r" % (show,))
    if show:
        return _latest(view)
    view.refresh()
    if (view.spec or {}).get("placement"):  # its supervisor's pid means nothing on this machine
        raise JobError(
            "job %s node %s: a Slurm job's processes run on its compute nodes, out of this agent's "
            "reach (--stall-action dump takes its stacks there)" % (view.fields["id"], view.fields["node"])
        )
    roles = job_pids(view)
    pids = [pid for pid, role in roles.items() if role != "supervisor"]
    if not pids:
        state = view.refresh()["state"]
        why = "it has ended (%s)" % state if state in TERMINAL_STATES else "no process of it is alive"
        raise JobError("job %s node %s: nothing to dump: %s" % (view.fields["id"], view.fields["node"], why))
    record = take_dump(view.files.dir, view.fields["id"], view.fields["node"], pids)
    write_note(view.files.dir, record, by="user")
    supervisor = own_supervisor(view)  # it sleeps until woken (issue 33): it journals the note now
    if supervisor is not None:
        with contextlib.suppress(OSError):
            os.kill(supervisor, signal.SIGUSR1)
    return record


def _latest(view: Any) -> Dict[str, Any]:
    path = latest(view.files.dir)
    if path is None:
        raise JobError(
            "job %s node %s: no dump saved (take one: gpudeck dump JOB)"
            % (view.fields["id"], view.fields["node"])
        )
    with open(str(path), "rb") as f:
        text = f.read(MAX_SHOWN).decode("utf-8", "replace")
    return {
        "job": view.fields["id"],
        "node": view.fields["node"],
        "path": str(path),
        "t": os.stat(str(path)).st_mtime,
        "text": text,
    }
