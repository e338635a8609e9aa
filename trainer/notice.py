"""gpudeck's preemption notice, as the trainer reads it: the file GPUDECK_PREEMPT_NOTICE names appears
(JSON {provider, action, time, seen_at}) just before the agent's stop signal when the cloud provider
is about to take the host. The stop is the usual one (SIGTERM: the step in flight finishes, then a
checkpoint, its upload, exit 0); the notice only says why, in the `sigterm` event and the
checkpoint's reason (`preempted`)."""

from __future__ import annotations

import json
import os
from typing import Any

NOTICE_VAR = "GPUDECK_PREEMPT_NOTICE"


def read_notice() -> dict[str, Any] | None:
    path = os.environ.get(NOTICE_VAR)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            notice = json.load(f)
    except (OSError, ValueError):
        return None
    return notice if isinstance(notice, dict) else None
