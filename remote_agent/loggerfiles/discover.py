"""Where a job's default logger writes: Lightning's `lightning_logs/version_N/` under the trainer's
root dir (the job's work dir unless the script says otherwise). Only a version dir touched after
the job started is the job's (an older one is a previous run's); the newest such one wins. A few
stats per look: the parent is listed only when its mtime moved."""

from __future__ import annotations

import os
from typing import Optional

LIGHTNING_DIR = "lightning_logs"
SLACK = 1.0  # seconds: a file system's coarse mtime must not hide a dir made at the job's start
MAX_VERSIONS = 10000  # entries looked at in lightning_logs/ (a dir of runs, not a dataset)


class VersionDirFinder:
    def __init__(self, workdir: str, since: float) -> None:
        self.parent = os.path.join(workdir, LIGHTNING_DIR)
        self.since = since - SLACK
        self._seen_mtime: Optional[float] = None

    def look(self) -> Optional[str]:
        """The job's version dir, or None (yet)."""
        try:
            mtime = os.stat(self.parent).st_mtime
        except OSError:
            return None
        if mtime == self._seen_mtime:  # no version dir added or removed since the last look
            return None
        self._seen_mtime = mtime
        best: Optional[str] = None
        best_n = -1
        try:
            names = os.listdir(self.parent)[:MAX_VERSIONS]
        except OSError:
            return None
        for name in names:
            n = version_number(name)
            if n is None or n <= best_n:
                continue
            path = os.path.join(self.parent, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if st.st_mtime >= self.since:
                best, best_n = path, n
        if best is None:
            self._seen_mtime = None  # a version dir made earlier may be written to later: look again
        return best


def version_number(name: str) -> Optional[int]:
    """N of `version_N` (Lightning's own naming), else None."""
    if not name.startswith("version_"):
        return None
    digits = name[len("version_") :]
    return int(digits) if digits.isdigit() and len(digits) < 10 else None
