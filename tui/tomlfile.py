"""The user's TOML files: one reader (tomllib, or tomli on 3.10) and one atomic, private writer."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TOMLDecodeError = tomllib.TOMLDecodeError


def parse_toml(text: str) -> dict[str, Any]:
    """The document as plain dicts; TOMLDecodeError names the line and column."""
    return tomllib.loads(text)


def read_toml(path: Path) -> dict[str, Any]:
    """OSError when unreadable, TOMLDecodeError when malformed."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def write_atomic(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one; a failed write leaves no temp file behind."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
