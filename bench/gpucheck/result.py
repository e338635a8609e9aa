"""One part's result, the summary table and the JSON written by `--out`."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

OK, SKIP, FAIL = "ok", "skip", "fail"


@dataclass
class PartResult:
    part: str
    status: str  # ok | skip | fail
    number: str = ""  # the headline figure, with its unit, as people read it
    reason: str = ""  # why it skipped or failed; for ok, what is worth knowing
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)  # raw values, for the JSON only


def ok(number: str, reason: str = "", details: dict[str, Any] | None = None) -> PartResult:
    return PartResult("", OK, number, reason, details=details or {})


def skip(reason: str, details: dict[str, Any] | None = None) -> PartResult:
    return PartResult("", SKIP, "", reason, details=details or {})


def fail(reason: str, number: str = "", details: dict[str, Any] | None = None) -> PartResult:
    return PartResult("", FAIL, number, reason, details=details or {})


HEADERS = ("part", "result", "number", "seconds", "reason")


def table(results: Sequence[PartResult]) -> str:
    """Fixed-width columns; the reason comes last and is never cut (it is what a reader needs)."""
    rows = [HEADERS] + [(r.part, r.status, r.number, f"{r.seconds:.1f}", r.reason) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * len(HEADERS[-1]))
    return "\n".join(lines)


def exit_code(results: Sequence[PartResult]) -> int:
    """0 unless a part failed: a skip (no GPU, no torch, no container engine) is not a failure."""
    return 1 if any(r.status == FAIL for r in results) else 0


def report(results: Sequence[PartResult], **about: Any) -> dict[str, Any]:
    return {**about, "ok": exit_code(results) == 0, "parts": [asdict(r) for r in results]}


def write_json(path: str, obj: dict[str, Any]) -> None:
    """Atomic: a run cut short by the device's limit leaves the last complete summary, never half of one."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gpu_check-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=2, default=str)
        f.write("\n")
    os.replace(tmp, path)
