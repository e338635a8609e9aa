"""A client's judgement of a multi-node job's pace, journaled by this node's supervisor (issue 34).

No supervisor sees the other nodes of its job (they run on other hosts), so the straggler and the
likely hang are judged by the client that asks every node (remote_agent/pace/); it tells the
named node's agent (`pace_note` op), which leaves the note here as `pace.json` and wakes the
supervisor; the supervisor, the journal's one writer, journals what changed:
  `straggler` {"why"} when this node is named, `unstraggler` {"why"} when the name goes,
  `likely_hang` {"why"} when this node is named the likely hang of a stall.
Standard library only (the agent's rule)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..storage.files import write_private_atomic

NAME = "pace.json"
MAX_WHY = 300


def checked_why(value: Any, field: str) -> Optional[str]:
    """A note's why: null, or up to 300 printable characters (ValueError says which field)."""
    if value is None:
        return None
    if isinstance(value, str) and 0 < len(value) <= MAX_WHY and value.isprintable():
        return value
    raise ValueError("%s: expected null or up to %d printable characters, got %r" % (field, MAX_WHY, value))


def write_note(path: Path, straggler: Optional[str], hang: Optional[str]) -> None:
    body = {"straggler": straggler, "hang": hang, "t": time.time()}
    write_private_atomic(path, json.dumps(body).encode("utf-8"))


def take_note(path: Path) -> Optional[Dict[str, Optional[str]]]:
    """The note left for this supervisor, read once (removed), or None; a bad one is dropped."""
    try:
        with open(str(path), "rb") as f:
            body = json.loads(f.read().decode("utf-8"))
        os.unlink(str(path))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    try:
        return {k: checked_why(body.get(k), k) for k in ("straggler", "hang")}
    except ValueError:
        return None


class PaceNotes:
    """What this node's journal last said; the records a new note makes (only what changed)."""

    def __init__(self) -> None:
        self.straggler: Optional[str] = None
        self.hang: Optional[str] = None

    def records(self, note: Dict[str, Optional[str]]) -> List[Tuple[str, Dict[str, Any]]]:
        out: List[Tuple[str, Dict[str, Any]]] = []
        straggler, hang = note.get("straggler"), note.get("hang")
        if straggler and not self.straggler:
            out.append(("straggler", {"why": straggler}))
        elif self.straggler and not straggler:
            out.append(("unstraggler", {"why": "caught up with the other nodes"}))
        self.straggler = straggler
        if hang and hang != self.hang:
            out.append(("likely_hang", {"why": hang}))
        self.hang = hang
        return out
