"""Owner-only files and directories: the agent's dir holds job specs with environment values."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import List, Union

PathLike = Union[str, Path]


def ensure_private_dir(path: PathLike) -> Path:
    """Create (with parents) and force mode 0700, whatever the umask. An existing directory on a
    read-only file system is used as it is: reading must work there; writes fail naming their file."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(str(p), 0o700)
    except OSError:
        if not p.is_dir():
            raise
    return p


def open_private(path: PathLike, flags: int) -> int:
    """An fd for a 0600 file; O_CLOEXEC so a job never inherits it (a lock fd must die with us)."""
    return os.open(str(path), flags | os.O_CLOEXEC, 0o600)


def write_private_atomic(path: PathLike, data: bytes) -> None:
    """Temp file, fsync, rename: readers see the old file or the whole new one."""
    p = Path(path)
    tmp = p.with_name(".%s.tmp.%d" % (p.name, os.getpid()))
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(str(tmp), str(p))
    except OSError:
        try:  # a full disk must not leave half a temp file behind
            os.unlink(str(tmp))
        except OSError:
            pass
        raise


def describe_os_error(exc: OSError) -> str:
    """One line naming the cause: `disk full (…)` for ENOSPC/EDQUOT, else the error's own text."""
    where = " (%s)" % exc.filename if getattr(exc, "filename", None) else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "disk full%s: %s" % (where, os.strerror(exc.errno))
    return "%s%s" % (exc.strerror or exc, where) if exc.strerror else str(exc)


def dir_entries(directory: PathLike) -> List[os.DirEntry]:  # type: ignore[type-arg]
    """A directory's entries; none when it does not exist (yet, or any more): what the collectors
    (code, environments, data) walk."""
    try:
        return list(os.scandir(str(directory)))
    except FileNotFoundError:
        return []
