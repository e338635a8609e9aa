"""Owner-only files and directories: the agent's dir holds job specs with environment values."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

PathLike = Union[str, Path]


def ensure_private_dir(path: PathLike) -> Path:
    """Create (with parents) and force mode 0700, whatever the umask."""
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(str(p), 0o700)
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
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(str(tmp), str(p))
