"""How `stop`/`kill` reach a job's supervisor: a control file, then SIGUSR1 to wake it."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Optional, Tuple

from ..storage.files import write_private_atomic

# What the agent sends the supervisor when it could not write control.json (a full disk):
# KILL_SIGNAL means kill; SIGTERM means stop with the spec's grace.
KILL_SIGNAL = signal.SIGUSR2


def write_control(path: Path, action: str, grace: float, reason: str) -> None:
    body = {"action": action, "grace": grace, "reason": reason, "t": time.time()}
    write_private_atomic(path, json.dumps(body).encode("utf-8"))


def read_control(path: Path) -> Optional[Tuple[str, float, str]]:
    try:
        with open(str(path), "rb") as f:
            body = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or body.get("action") not in ("stop", "kill"):
        return None
    grace = body.get("grace")
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
        grace = 60.0
    return body["action"], float(grace), str(body.get("reason") or "user")
