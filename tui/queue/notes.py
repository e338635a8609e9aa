"""Why the controller did not (yet) bring capacity for a pool's queued jobs — a launch under way, the
pool's spend ceiling, a launch that failed — as `gpudeck queue` and `ps` add it to the waiting
reason. One small 0600 file beside the queue's (its suffix is not a queued job's), written by the
controller each pass, read by the listing; a missing or broken file is no note."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import paths

NAME = "capacity.note"


def notes_path(directory: Path | None = None) -> Path:
    return (directory or paths.queue_dir()) / NAME


def write_notes(notes: dict[str, str], directory: Path | None = None) -> None:
    """{the queued jobs' --pool, comma-joined: the note}; best effort (a note is not state)."""
    path = notes_path(directory)
    try:
        paths.ensure_private(path.parent)
        tmp = path.with_suffix(".tmp-note")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(notes, f)
        os.replace(tmp, path)
    except OSError:
        pass


def read_notes(directory: Path | None = None) -> dict[str, str]:
    try:
        data = json.loads(notes_path(directory).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v)[:500] for k, v in data.items() if isinstance(v, str)}
