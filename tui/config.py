"""Writing config.toml: the one setting gpudeck itself changes ([ui] theme, from the `t` key).

Written with tomlkit so the user's comments and layout survive, atomically (temp file + rename) so
a crash never leaves half a file. Reading is tui/settings.py's job.
"""

from __future__ import annotations

from pathlib import Path

import tomlkit

from .settings import config_path
from .tomlfile import write_atomic


class ConfigError(Exception):
    """config.toml could not be written; the message names the file and the problem."""


def save_theme(name: str, path: Path | None = None) -> Path:
    """Set [ui] theme = name, keeping everything else in the file as the user wrote it."""
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # tomlkit's ParseError; never overwrite a file we cannot read back
        raise ConfigError(f"{path}: not valid TOML, left unchanged: {exc}") from None
    ui = doc.get("ui")
    if ui is None:
        ui = tomlkit.table()
        doc["ui"] = ui
    elif not isinstance(ui, dict):
        raise ConfigError(f"{path}: `ui` is not a table, left unchanged")
    ui["theme"] = name
    try:
        write_atomic(path, tomlkit.dumps(doc))
    except OSError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return path
