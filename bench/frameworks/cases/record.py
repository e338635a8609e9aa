"""What each case writes beside its output: the framework's own record of its training loss."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def save(axis: str, points: list[tuple[float, float]]) -> None:
    """axis: "step" or "epoch" (the record's unit); points: (step or epoch, loss), as recorded."""
    out = Path(sys.argv[1]) / "record.json"
    out.write_text(json.dumps({"axis": axis, "points": [[float(s), float(v)] for s, v in points]}))
