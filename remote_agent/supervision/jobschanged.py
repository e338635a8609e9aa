"""`jobs.changed` in the agent dir: a host-wide mark that the set of live supervisors changed (one
took its lock, or let go of it, or a lost job's end was journaled). A budgeted job's supervisor
counts its live neighbours for its share (budget.py); it stats this file every few seconds and
reads the job dirs only when the mark moved, instead of opening every job's lock each time (issue
33). A byte is appended per change (its size and mtime move), the file cut back when it grows past
MAX_BYTES. Standard library only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Tuple

from ..storage.files import open_private

NAME = "jobs.changed"
MAX_BYTES = 4096

Stamp = Optional[Tuple[int, int, int]]


def note_change(agent_dir: Path) -> None:
    """Never raises: a mark that cannot be written costs a neighbour's share its freshness only."""
    try:
        fd = open_private(agent_dir / NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except OSError:
        return
    try:
        if os.fstat(fd).st_size >= MAX_BYTES:
            os.ftruncate(fd, 0)
        os.write(fd, b".")
    except OSError:
        pass
    finally:
        os.close(fd)


def change_stamp(agent_dir: Path) -> Stamp:
    """What the mark looks like now (None: there is none, e.g. only older agents ran here)."""
    try:
        st = os.stat(str(agent_dir / NAME))
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
