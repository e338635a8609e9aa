"""Stacks on request (gpudeck dump, issue 34): where the host has no py-spy, gpudeck sends SIGURG to
every process that catches it and reads what it wrote to GPUDECK_STACKS_DIR/<pid>.txt. Any program
opts in with these lines; SIGURG is ignored by default and used by nothing else in a training job."""

from __future__ import annotations

import faulthandler
import os
import signal
from typing import IO

STACKS_VAR = "GPUDECK_STACKS_DIR"
_open: list[IO[str]] = []  # kept open for the process's life: faulthandler writes to its fd


def register() -> bool:
    """Register this process (call again in a forked worker: it gets its own file). False when the
    job has no stacks directory (not launched by gpudeck) or the file cannot be opened."""
    directory = os.environ.get(STACKS_VAR)
    if not directory or not hasattr(signal, "SIGURG"):
        return False
    try:
        fd = os.open(
            os.path.join(directory, f"{os.getpid()}.txt"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
        )
        f = open(fd, "a", encoding="utf-8")  # noqa: SIM115
    except OSError:
        return False
    _open.append(f)
    faulthandler.register(signal.SIGURG, file=f, all_threads=True, chain=False)
    return True
