"""Where a host's warm connection lives: its socket, its lock and the masters' log.

The directory is the user's runtime dir ($XDG_RUNTIME_DIR/gpudeck, platformdirs' user_runtime_dir
when the system gives one) or, without one, GPUDECK_HOME/run; 0700 either way. A socket's name is a
hash of everything that makes the connection (gpudeck home, user, host name, target, key, alias), so
it stays far below the 108-byte limit of a unix socket path and two homes never share a master.
"""

from __future__ import annotations

import getpass
import hashlib
import os
from pathlib import Path

from .. import paths
from ..hosts_file import HostEntry

SOCKET_PATH_MAX = 107  # sun_path is 108 bytes with its NUL


def runtime_dir() -> Path:
    """The 0700 directory of this user's sockets (made on first use)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    base: Path | None = None
    if xdg and os.path.isdir(xdg) and os.stat(xdg).st_uid == os.getuid():
        from platformdirs import user_runtime_dir

        base = Path(user_runtime_dir("gpudeck"))
    if base is None or len(str(base)) > SOCKET_PATH_MAX - 30:
        base = paths.data_dir() / "run"
    return paths.ensure_private(base)


def host_key(entry: HostEntry) -> str:
    """What tells two connections apart: the same key is the same master."""
    alias = entry.extra.get("host_key_alias")
    parts = [
        "sessions",  # masters that share one serve (warm_serve.py): an older master is never asked
        str(paths.data_dir()),
        getpass.getuser(),
        entry.name,
        entry.target,
        entry.identity_file or "",
        str(alias or ""),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def socket_path(entry: HostEntry) -> Path:
    path = runtime_dir() / f"{host_key(entry)}.sock"
    if len(str(path)) > SOCKET_PATH_MAX:  # a deep GPUDECK_HOME: one level under /tmp, still ours only
        short = paths.ensure_private(Path("/tmp") / f"gpudeck-{os.getuid()}")
        if short.lstat().st_uid != os.getuid():
            raise OSError(f"{short} belongs to another user")
        path = short / path.name
    return path


def log_path() -> Path:
    """The masters' own errors, never the terminal (0600)."""
    return runtime_dir() / "warm.log"
