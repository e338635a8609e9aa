"""`--hold-on-fail DURATION` (spec.hold_on_fail): a job that ends `failed` keeps its node for
debugging. Its dir (output, journal, spec), the core files its processes dumped (RLIMIT_CORE is
raised for the job when a hold is asked) and the environment it ran with (`env.json`, 0600) stay;
its end record carries `held_until` (epoch seconds): `rm` refuses it until then, clients keep its
host (a launched instance, a managed job's host) and show it as held. `release` ends it early: a
`hold_released` event, journaled under the node's lock like any end.

Standard library only (the agent's rule).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from typing import Any, Dict, Mapping, Optional

from ..storage.files import open_private, write_private_atomic
from ..storage.journal import JournalWriter
from ..storage.layout import JobFiles

ENV_FILE = "env.json"
LOCK_WAIT = 5.0  # a supervisor still writing its end lets go of the lock within this


def hold_seconds(spec: Mapping[str, Any]) -> Optional[float]:
    value = spec.get("hold_on_fail")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def prepare(spec: Mapping[str, Any], files: JobFiles, env: Mapping[str, str]) -> None:
    """Before the command starts: cores allowed (up to the hard limit), its environment kept."""
    if hold_seconds(spec) is None:
        return
    try:
        import resource

        hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))  # inherited by the command
    except (ImportError, ValueError, OSError):
        pass
    try:
        write_private_atomic(files.dir / ENV_FILE, json.dumps(dict(env), sort_keys=True).encode("utf-8"))
    except OSError:
        pass  # a full disk: the hold still keeps the rest


def end_fields(spec: Mapping[str, Any], state: str, now: float) -> Dict[str, Any]:
    """`held_until` for a failed end of a job asked to hold; {} otherwise."""
    seconds = hold_seconds(spec)
    if seconds is None or state != "failed":
        return {}
    return {"held_until": round(now + seconds, 3)}


def release(files: JobFiles, by: str = "user") -> bool:
    """End a hold early: `hold_released` journaled; False when the lock stays taken (a writer lives)."""
    lock_fd = open_private(files.lock, os.O_RDWR | os.O_CREAT)
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)
        journal = JournalWriter(files.journal)
        try:
            journal.append("event", event="hold_released", data={"by": by})
        finally:
            journal.close()
    finally:
        os.close(lock_fd)
    try:  # the listing caches an ended job until its job dir changes (serving/listing.py)
        os.utime(str(files.dir.parent))
    except OSError:
        pass
    return True
