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
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path
