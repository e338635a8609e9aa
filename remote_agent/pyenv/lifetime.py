"""A build ends with its job. `stop` signals the job's script (bash), not this step: the kernel tells
us when the script dies (PR_SET_PDEATHSIG), and the step then ends its pip or uv (stream.py) and
exits, leaving a half-built environment that the next build wipes -- not minutes of pip after a
stop, holding the stop until its grace runs out."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from types import FrameType
from typing import Optional

PR_SET_PDEATHSIG = 1
STOPPED_STATUS = 128 + signal.SIGTERM


def end_with_the_job() -> None:
    """SIGTERM (ours, or the script's death) ends this step; best effort where prctl is missing."""
    signal.signal(signal.SIGTERM, _stopped)
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the script died before the request was made
        _stopped(signal.SIGTERM, None)


def _stopped(signum: int, frame: Optional[FrameType]) -> None:
    raise SystemExit(STOPPED_STATUS)
