"""config.toml: the user's settings. Read with tomllib; written with tomlkit so the user's comments
and layout survive, atomically (temp file + rename) so a crash never leaves half a file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import tomlkit

from . import paths
from .tomlfile import write_atomic

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """config.toml could not be read or written; the message names the file and the problem."""


def config_path() -> Path:
    return paths.config_dir() / "config.toml"


def load(path: Path | None = None) -> dict[str, Any]:
    """The settings; {} when there is no file. A malformed file raises ConfigError."""
    path = path or config_path()
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def theme_name(settings: dict[str, Any]) -> str | None:
    ui = settings.get("ui")
    name = ui.get("theme") if isinstance(ui, dict) else None
    return name if isinstance(name, str) and name else None


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
    _write_atomic(path, tomlkit.dumps(doc))
    return path


def _write_atomic(path: Path, text: str) -> None:
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc}") from None
