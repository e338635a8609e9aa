"""What a notice does to a job (its supervisor calls these): the notice file the job may read, and
the grace its stop gets so that it ends before the provider takes the host.

The notice file is `notice.json` in the job's node dir; GPUDECK_PREEMPT_NOTICE names it in every
job's environment from launch on, and it appears (written atomically, before the job's stop signal)
holding {provider, action, time, seen_at}: `time` is the provider's ISO time the host goes at,
`seen_at` when this agent saw it (epoch seconds).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Dict, Optional

from ..storage.files import write_private_atomic

NOTICE_VAR = "GPUDECK_PREEMPT_NOTICE"
NOTICE_FILE = "notice.json"
REASON = "preempted"
MARGIN = 10.0  # seconds the job's end is placed before the notice's time (journal, last upload)


def notice_path(job_dir: Path) -> Path:
    return Path(job_dir) / NOTICE_FILE


def public(notice: Dict[str, Any]) -> Dict[str, Any]:
    """The notice as the file, the journal and `inspect` carry it."""
    return {k: notice.get(k) for k in ("provider", "action", "time", "seen_at")}


def write_notice(job_dir: Path, notice: Dict[str, Any]) -> Optional[str]:
    """None, or why the file could not be written (the stop goes on regardless)."""
    try:
        write_private_atomic(notice_path(job_dir), (json.dumps(public(notice)) + "\n").encode("utf-8"))
    except OSError as exc:
        return str(exc)
    return None


def notice_grace(spec_grace: float, notice_at: float, now: Optional[float] = None) -> float:
    """The job's grace, cut so its stop ends MARGIN before the host goes (half of what is left when
    less than 2 * MARGIN is); never negative."""
    left = notice_at - (time.time() if now is None else now)
    room = left - MARGIN if left >= 2 * MARGIN else left / 2
    return max(0.0, min(float(spec_grace), room))
