"""The trainer's start-up marks (the `resumed` event's `startup`): a process's start time from /proc
is when it was really started, to a clock tick (not /proc/stat's whole-second boot time)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainer.startup import LAUNCHER_IMPORTED, Startup

ROOT = Path(__file__).resolve().parents[1]
TICK = 1 / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_process_reports_the_time_it_was_started() -> None:
    before = time.time()
    out = subprocess.run(
        [sys.executable, "-c", "from trainer.startup import process_started; print(process_started())"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    after = time.time()
    started = float(out)
    assert before - 2 * TICK <= started <= after, (before, started, after)


def test_marks_keep_their_order_and_the_launchers_import_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(LAUNCHER_IMPORTED, "1700000000.25")
    s = Startup()
    s.mark("imported")
    s.mark("joined")
    marks = s.fields()
    assert list(marks)[-3:] == ["launcher_imported", "imported", "joined"]
    assert marks["launcher_imported"] == 1700000000.25 and marks["imported"] <= marks["joined"]
    monkeypatch.setenv(LAUNCHER_IMPORTED, "not a time")
    assert "launcher_imported" not in Startup().fields()  # a stray value is left out, not fatal
