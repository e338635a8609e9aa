"""Where the client keeps its files: GPUDECK_HOME when set, else the platform's config/data dirs."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "gpudeck"


def _home() -> Path | None:
    value = os.environ.get("GPUDECK_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    return _home() or Path(platformdirs.user_config_dir(APP))


def data_dir() -> Path:
    return _home() or Path(platformdirs.user_data_dir(APP))


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


def unwritable_hint(path: Path) -> str:
    """Why a write under `path` may have failed, for the one line that names it."""
    if path.is_dir() and not os.access(path, os.W_OK):
        return f"{path} is not writable; commands that only read still work"
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return f"{path} is on a read-only file system; commands that only read still work"
    except OSError:
        pass
    return "is its disk full?"
