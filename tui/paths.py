"""Where the client keeps its files: GPUDECK_HOME when set, else the platform's config/data dirs."""

from __future__ import annotations

import errno
import os
from pathlib import Path

APP = "gpudeck"


def _home() -> Path | None:
    value = os.environ.get("GPUDECK_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    home = _home()
    if home is not None:
        return home
    import platformdirs  # here: ~5 ms of a command's start, not needed under GPUDECK_HOME

    return Path(platformdirs.user_config_dir(APP))


def data_dir() -> Path:
    home = _home()
    if home is not None:
        return home
    import platformdirs

    return Path(platformdirs.user_data_dir(APP))


def queue_dir() -> Path:
    """The jobs waiting for GPUs (tui/queue): here, so `ps` can tell there is none without the queue's code."""
    return data_dir() / "queue"


def local_agent_dir() -> Path:
    """The `local` host's agent dir lives with the client's data, not in ~/.gpudeck."""
    return data_dir() / "local-agent"


def state_db() -> Path:
    return data_dir() / "state.db"


def ensure_private(path: Path) -> Path:
    """Create (owner-only) and force 0700. A directory that already exists on a read-only home is
    used as it is: reading must work there; a write into it fails later, naming its file."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path, 0o700)
    except OSError:
        if not path.is_dir():
            raise
    return path


def unwritable_hint(path: Path, file: Path | None = None) -> str:
    """Why a write of `file` under the directory `path` may have failed (sqlite says only "unable
    to open database file"), found by looking: the real cause, never a guess."""
    if file is not None and file.exists() and not file.is_file():
        return f"{file} is not a file"
    if not path.is_dir():
        return f"{path} is not a directory" if path.exists() else f"{path} does not exist"
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return f"{path} is on a read-only file system; commands that only read still work"
    except OSError:
        pass
    if not os.access(path, os.W_OK) or (
        file is not None and file.exists() and not os.access(file, os.R_OK | os.W_OK)
    ):
        return f"permission denied on {file if file is not None and file.exists() else path}; commands that only read still work"
    try:
        vfs = os.statvfs(path)
        if vfs.f_bavail * vfs.f_frsize < 1 << 20:
            return f"disk full ({path})"
    except OSError:
        pass
    return "the cause is not known"


def os_error_cause(exc: OSError, directory: Path) -> str:
    """An OSError said as its cause (errno's own words), with what it means for gpudeck where known."""
    if exc.errno == errno.ENOSPC:
        return f"no space left on the disk of {directory}"
    if exc.errno == errno.EROFS:
        return f"{directory} is on a read-only file system; commands that only read still work"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied ({exc.filename or directory}); commands that only read still work"
    what = exc.strerror or str(exc)
    return f"{what}: {exc.filename}" if exc.filename and str(exc.filename) != str(directory) else what
