"""One change of a job at a time, decided for the whole job (issue 29): a resize, a restart, a user's
stop and a removal meet here, on the host of the job's first node, in `jobs/<job>/transition.json`.

Per-node restart markers let two resizes each win half a job; this file is one decision per job.
Each act reads and writes it under `flock` on the job's own dir (held for the act only: the client
that drives a resize may die; its claim then goes stale, and a stop still wins over it).

Phases: `begun` (a resize or restart claimed the job), `stopped` (a user's stop arrived during it:
the resize must not relaunch, or must stop what it relaunched), `committed` (the new job runs as
`token`: the job was restarted as it), `removing` (`rm` under way: no restart may start).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Any, Dict, Iterator

from ..names import is_job_id
from ..storage.files import write_private_atomic
from ..storage.jsonio import dumps, loads_object
from ..storage.layout import jobs_root

FILE_NAME = "transition.json"
WHATS = ("resize", "restart")
ACTS = ("begin", "check", "commit", "abort", "stop", "remove")
# A claim whose client never came back (killed mid-resize) no longer blocks another resize: the
# longest resize waits for a stop's grace period (60 s by default) plus a relaunch.
STALE_AFTER = 900.0


class TransitionError(Exception):
    """The act is refused; the message is the one-line answer."""


def transition(root: Path, job: Any, act: Any, what: Any = None, token: Any = None) -> Dict[str, Any]:
    """One act on the job's transition; answers the state after it (`{}`: none)."""
    if not is_job_id(job):
        raise TransitionError("job: not a job id: %r" % (job,))
    if act not in ACTS:
        raise TransitionError("act: expected one of %s, got %r" % (", ".join(ACTS), act))
    if act in ("begin", "check", "commit", "abort") and not is_job_id(token):
        raise TransitionError("token: expected the new job's id, got %r" % (token,))
    if act == "begin" and what not in WHATS:
        raise TransitionError("what: expected one of %s, got %r" % (", ".join(WHATS), what))
    directory = jobs_root(root) / job
    if not directory.is_dir():
        if act in ("stop", "remove", "abort"):
            return {}  # nothing of the job is here: nothing to decide
        raise TransitionError("unknown job %s" % job)
    with _locked(directory):
        state = _read(directory)
        return _ACTS[act](directory, job, state, what, token)


def _begin(directory: Path, job: str, state: Dict[str, Any], what: Any, token: Any) -> Dict[str, Any]:
    phase = state.get("phase")
    if phase == "committed":
        raise TransitionError("job %s was already restarted as %s" % (job, state.get("token")))
    if phase == "removing":
        raise TransitionError("job %s is being removed" % job)
    if phase == "begun" and state.get("token") != token and not _stale(state):
        raise TransitionError(
            "job %s: a %s is under way (as %s, for %.0f s): one change of a job at a time "
            "(a stop of the job ends a claim whose resize died)"
            % (job, state.get("what"), state.get("token"), max(0.0, time.time() - _t(state)))
        )
    new = {"phase": "begun", "what": what, "token": token, "t": time.time()}
    _write(directory, new)
    return new


def _check(directory: Path, job: str, state: Dict[str, Any], what: Any, token: Any) -> Dict[str, Any]:
    """The claim still holds (no stop arrived): the resize may relaunch."""
    if state.get("token") != token:
        raise TransitionError("job %s: the %s as %s holds no claim on it" % (job, what or "change", token))
    if state.get("phase") == "stopped":
        raise TransitionError("job %s was stopped during the %s: not relaunched" % (job, state.get("what")))
    return state


def _commit(directory: Path, job: str, state: Dict[str, Any], what: Any, token: Any) -> Dict[str, Any]:
    _check(directory, job, state, what, token)
    new = dict(state, phase="committed", t=time.time())
    _write(directory, new)
    return new


def _abort(directory: Path, job: str, state: Dict[str, Any], what: Any, token: Any) -> Dict[str, Any]:
    """A resize that did not happen (or was stopped) lets the next one begin."""
    if state.get("token") == token and state.get("phase") in ("begun", "stopped"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(directory / FILE_NAME))
        return {}
    return state


def _stop(directory: Path, job: str, state: Dict[str, Any], what: Any, token: Any) -> Dict[str, Any]:
    """A user's stop wins over a resize under way: the resize learns it at its next check."""
    if state.get("phase") == "begun":
        new = dict(state, phase="stopped")
        _write(directory, new)
        return new
    return state


def _remove(directory: Path, job: str, state: Dict[str, Any], what: Any, token: Any) -> Dict[str, Any]:
    if state.get("phase") == "begun" and not _stale(state):
        raise TransitionError(
            "job %s: a %s is under way (as %s): remove it once that is done"
            % (job, state.get("what"), state.get("token"))
        )
    new = dict(state, phase="removing", t=time.time())
    _write(directory, new)
    return new


_ACTS = {
    "begin": _begin,
    "check": _check,
    "commit": _commit,
    "abort": _abort,
    "stop": _stop,
    "remove": _remove,
}


def _stale(state: Dict[str, Any]) -> bool:
    return time.time() - _t(state) > STALE_AFTER


def _t(state: Dict[str, Any]) -> float:
    t = state.get("t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else 0.0


def _read(directory: Path) -> Dict[str, Any]:
    try:
        body = loads_object((directory / FILE_NAME).read_text("utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}
    return body or {}


def _write(directory: Path, state: Dict[str, Any]) -> None:
    write_private_atomic(directory / FILE_NAME, dumps(state).encode("utf-8"))


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    fd = os.open(str(directory), os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def forget_job_dir(directory: Path) -> None:
    """After a node's removal: the job's dir (and its transition) goes with its last node."""
    with contextlib.suppress(OSError):
        if not any(entry.is_dir() for entry in os.scandir(str(directory))):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(directory / FILE_NAME))
        os.rmdir(str(directory))  # other nodes of the job are still here: it stays
