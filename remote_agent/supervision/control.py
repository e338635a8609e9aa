"""How `stop`/`kill` reach a job's supervisor: a control file, then SIGUSR1 to wake it.

A full disk cannot take a new control.json (a temp file and a rename need a free block). So each
job also gets `control.slot` at launch: a small file whose block is already allocated; a request
that finds no room is written over it in place, grace and reason intact. Only when even that
fails does the agent fall back to a bare signal (SIGUSR2 = kill, SIGTERM = stop with the spec's grace).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from ..storage.files import open_private, write_private_atomic

KILL_SIGNAL = signal.SIGUSR2
SLOT_BYTES = 512
SLOT_NAME = "control.slot"


def slot_path(control: Path) -> Path:
    return Path(control).with_name(SLOT_NAME)


def make_control_slot(control: Path) -> None:
    """Allocate the slot now, while there is room (launch time): blank, newline-ended, synced."""
    fd = open_private(slot_path(control), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, b" " * (SLOT_BYTES - 1) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def write_control(path: Path, action: str, grace: float, reason: str) -> None:
    body = {"action": action, "grace": grace, "reason": reason, "t": time.time()}
    data = json.dumps(body).encode("utf-8")
    try:
        write_private_atomic(path, data)
    except OSError:
        if len(data) > SLOT_BYTES - 1:  # a long (or escaped non-ASCII) reason: its start is enough
            data = json.dumps(dict(body, reason=reason[:40])).encode("utf-8")
        if not _write_slot(slot_path(path), data):
            raise


def _write_slot(slot: Path, data: bytes) -> bool:
    """Over the slot's allocated bytes, in place: needs no free block. False when there is no slot."""
    if len(data) > SLOT_BYTES - 1:
        return False
    try:
        fd = os.open(str(slot), os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.pwrite(fd, data + b" " * (SLOT_BYTES - 1 - len(data)) + b"\n", 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _read(path: Path) -> Optional[Dict[str, Any]]:
    try:
        with open(str(path), "rb") as f:
            body = json.loads(
                f.read().decode("utf-8")
            )  # a torn slot is no JSON: the next poll reads it whole
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _sent_at(body: Dict[str, Any]) -> float:
    """When a request was written (its `t`); 0 when it carries no number."""
    t = body.get("t")
    return t if isinstance(t, (int, float)) and not isinstance(t, bool) else 0


def read_control(path: Path) -> Optional[Tuple[str, float, str]]:
    """The newest request, from control.json or the slot."""
    bodies = [
        b
        for b in (_read(path), _read(slot_path(path)))
        if b is not None and b.get("action") in ("stop", "kill")
    ]
    if not bodies:
        return None
    body = max(bodies, key=_sent_at)
    grace = body.get("grace")
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
        grace = 60.0
    return body["action"], float(grace), str(body.get("reason") or "user")
