"""What a piece of code opens and lists, observed through a PEP 578 audit hook (no patching): the
tests of issue 33 count the files and dirs an op touches, never its time."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

_EVENTS = ("open", "os.listdir", "os.scandir")
_recording: list[list[str]] = []  # the active recorders (an audit hook cannot be removed)
_installed = False


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not _recording or event not in _EVENTS or not args:
        return
    target = args[0]
    if isinstance(target, (str, bytes, os.PathLike)):
        path = os.fsdecode(target)
        for seen in _recording:
            seen.append(path)


@contextlib.contextmanager
def touched() -> Iterator[list[str]]:
    """The paths opened or listed in this process (any thread) while the block runs."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    seen: list[str] = []
    _recording.append(seen)
    try:
        yield seen
    finally:
        _recording.remove(seen)


def under(paths: list[str], directory: Path) -> list[str]:
    """Those of `paths` inside `directory` (or it)."""
    base = str(directory)
    return [p for p in paths if p == base or p.startswith(base + os.sep)]
