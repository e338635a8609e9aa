"""Helpers for the tests that run the reference trainer through gpudeck (scale, pools, elastic,
degraded nodes): a tiny synthetic run, a CLI call that must succeed, and the trainer's JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import gpudeck

SAMPLES, BATCH = 64, 12
# The reference trainer as small and quick as it gets: 64 indexed samples, global batch 12 (divisible by
# 2 and 3 ranks), 8-pixel images, one thread, no DataLoader workers (2 shared cores)
TINY = [
    "--synthetic-size",
    str(SAMPLES),
    "--batch-size",
    str(BATCH),
    "--image-size",
    "8",
    "--workers",
    "0",
    "--threads",
    "1",
    "--val-size",
    "8",
]


def ok(*args: str, cwd: Path | None = None, timeout: float = 120) -> str:
    """stdout of a gpudeck command that must succeed."""
    r = gpudeck(*args, cwd=cwd, timeout=timeout)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def json_lines(text: str) -> list[dict]:
    """The JSON objects among output lines (the trainer's events); other lines are left out."""
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def points(job: str, cwd: Path) -> list[dict]:
    """Node 0's trainer events of a job."""
    return json_lines(ok("logs", "--node", "0", job, cwd=cwd))
