"""`stop` and `kill` of a Slurm job, asked of the login node's agent.

stop: each node's supervisor gets the stop through its control file on the shared directory (it
polls it every second; no signal can reach it from the login node), sends the job's stop signal to
the command (the trainer checkpoints) and, after the grace, kills what is left; once every node has
ended (or the grace and a margin passed) the job is cancelled, so Slurm records CANCELLED. A
pending job is cancelled at once. kill: the control files say kill, the steps get SIGUSR2 (a
supervisor's kill signal: it SIGKILLs its tree and journals `killed`), and the job is cancelled.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, List

from ..jobstate import TERMINAL_STATES
from ..storage.files import write_private_atomic
from ..supervision.control import write_control
from .commands import SlurmError, run
from .record import read_record
from .script import stopping_marker

STOP_MARGIN = 30.0
KILL_WAIT = 5.0  # for the supervisors to journal a kill before the cancel
POLL = 0.2

Fold = Callable[[str], Dict[str, Any]]  # node → its object, Slurm laid over (states.fold_slurm)


class SlurmControlError(Exception):
    pass


def node_dirs(job_root: Path) -> List[Path]:
    return sorted(
        (p for p in job_root.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)
    )


def scancel(slurm_id: str, *options: str) -> None:
    try:
        code, out, err = run(["scancel", *options, slurm_id])
    except SlurmError as exc:
        raise SlurmControlError(str(exc)) from None
    if code != 0 and "already completing or completed" not in err and "Invalid job id" not in err:
        raise SlurmControlError("scancel %s exited %d: %s" % (slurm_id, code, (err or out).strip()[:300]))


def end_slurm_job(
    job_root: Path, node: str, action: str, grace: float, reason: str, fold: Fold
) -> Dict[str, Any]:
    """Stop or kill every node of the Slurm job; the asked node's object once it has ended."""
    record = read_record(job_root / node)
    if record is None:
        raise SlurmControlError("job %s: not submitted to Slurm yet; try again" % job_root.name)
    slurm_id = record["job_id"]
    nodes = node_dirs(job_root)
    states = {n.name: fold(n.name)["state"] for n in nodes}
    if action == "kill" or all(s in ("pending", *TERMINAL_STATES) for s in states.values()):
        for n in nodes:
            if states[n.name] not in TERMINAL_STATES:
                write_control(n / "control.json", "kill" if action == "kill" else "stop", 0.0, reason)
        if action == "kill" and any(s in ("starting", "running") for s in states.values()):
            # SIGUSR2 is a supervisor's kill (supervision/control.py): it journals `killed` before
            # the cancel's TERM could make it a stop; the steps' other processes die of it too.
            write_private_atomic(stopping_marker(job_root), b"")  # the batch script waits for our scancel
            scancel(slurm_id, "--signal=USR2")
            _until_ended(nodes, fold, KILL_WAIT)
        scancel(slurm_id)
        return _wait(job_root, node, fold, STOP_MARGIN)
    write_private_atomic(stopping_marker(job_root), b"")  # the batch script waits for our scancel
    for n in nodes:
        if states[n.name] not in TERMINAL_STATES:
            write_control(n / "control.json", "stop", grace, reason)
    _until_ended(nodes, fold, grace + STOP_MARGIN)
    scancel(slurm_id)
    return _wait(job_root, node, fold, STOP_MARGIN)


def _until_ended(nodes: List[Path], fold: Fold, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(fold(n.name)["state"] in TERMINAL_STATES for n in nodes):
            return
        time.sleep(POLL)


def _wait(job_root: Path, node: str, fold: Fold, timeout: float) -> Dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        obj = fold(node)
        if obj["state"] in TERMINAL_STATES and (obj.get("slurm") or {}).get("settled", True):
            return obj
        if time.monotonic() > deadline:
            raise SlurmControlError("job %s did not end within %.0f s of scancel" % (job_root.name, timeout))
        time.sleep(POLL)
