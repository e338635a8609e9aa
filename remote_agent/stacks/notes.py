"""A dump taken by `serve` reaches the journal through its supervisor (the one writer): a small note
beside the dump, `dumps/.pending-<stamp>.json`, that the supervisor journals as `dumped` and removes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List

from ..storage.files import write_private_atomic
from ..storage.jsonio import loads_object

PREFIX = ".pending-"
MAX_NOTES = 16  # journaled per look; the rest wait for the next one


def dumps_dir(node_dir: Path) -> Path:
    """Where a node's dumps and their notes go. Here, not in take.py: every supervisor looks for
    notes, and taking a dump (py-spy, the faulthandler route) is imported only to take one."""
    return node_dir / "dumps"


def event_data(record: Dict[str, Any], by: str) -> Dict[str, Any]:
    """The `dumped` event's data: where the dump is, how many stacks, how many not reached, by whom."""
    return {
        "path": record["path"],
        "stacks": record["counts"]["stacks"],
        "unreached": record["counts"]["unreached"],
        "ranks": sorted({e["rank"] for e in record["stacks"] if isinstance(e.get("rank"), int)}),
        "by": by,
    }


def write_note(node_dir: Path, record: Dict[str, Any], by: str) -> None:
    name = PREFIX + os.path.basename(record["path"])[:-4] + ".json"
    write_private_atomic(dumps_dir(node_dir) / name, json.dumps(event_data(record, by)).encode())


def take_notes(node_dir: Path) -> List[Dict[str, Any]]:
    """The pending notes' event data, oldest first; each note is removed as it is read."""
    directory = dumps_dir(node_dir)
    try:
        names = sorted(n for n in os.listdir(str(directory)) if n.startswith(PREFIX) and n.endswith(".json"))
    except OSError:
        return []
    found = []
    for name in names[:MAX_NOTES]:
        path = directory / name
        try:
            with open(str(path), "rb") as f:
                body = loads_object(f.read(4096).decode("utf-8", "replace"))
            os.unlink(str(path))
        except OSError:
            continue
        if body is not None:
            found.append(body)
    return found
