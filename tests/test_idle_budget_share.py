"""Issue 33: a budgeted job's supervisor counts its live neighbours for its share only when the
host-wide mark says a supervisor came or went (remote_agent/supervision/jobschanged.py), not by
opening every job's lock every 5 s. Counted with an audit hook on the directory scans it makes;
time is the meter's own argument."""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_agent.supervision.budget import SHARE_EVERY, BudgetMeter
from remote_agent.supervision.jobschanged import note_change

_scans: list[str] | None = None


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == "os.scandir" and _scans is not None:
        _scans.append(str(args[0]))


sys.addaudithook(_hook)  # audit hooks cannot be removed: this one records only while a test asks


@pytest.fixture
def scans() -> Iterator[list[str]]:
    global _scans
    _scans = []
    try:
        yield _scans
    finally:
        _scans = None


def node_dir(agent_dir: Path, job: str) -> Path:
    d = agent_dir / "jobs" / job / "0"
    d.mkdir(parents=True)
    (d / "spec.json").write_text("{}")
    return d


def held(d: Path) -> int:
    """A neighbour's live supervisor: its lock held (by this process, through its own open file)."""
    fd = os.open(str(d / "lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_the_share_is_counted_again_only_when_a_supervisor_came_or_went(
    tmp_path: Path, scans: list[str]
) -> None:
    own, neighbour = node_dir(tmp_path, "a"), node_dir(tmp_path, "b")
    fds = [held(neighbour)]
    note_change(tmp_path)  # the neighbour's start
    meter = BudgetMeter({"budget": 10.0, "price": {"per_hour": 3.6}}, 0.0, own)
    meter.split_by = "jobs"  # no GPU here (autostop.py says so on its first sample)
    try:
        meter.refresh(0.0)
        assert meter.share_at(0.0) == 0.5 and scans  # the first count reads the job dirs
        scans.clear()
        for step in range(1, 6):  # 25 s of the same two jobs: one stat each time, no count
            meter.refresh(step * SHARE_EVERY)
        assert scans == []
        fds.append(held(node_dir(tmp_path, "c")))
        note_change(tmp_path)  # a third job's supervisor took its lock
        meter.refresh(6 * SHARE_EVERY)
        assert scans and meter.share_at(6 * SHARE_EVERY) == pytest.approx(1 / 3)
    finally:
        for fd in fds:
            os.close(fd)
