"""`gpudeck run --pty` (spec.pty, issue 32): the command's output is a terminal, so it draws its
bars as for its user; the log and the parser still get every frame, and `stop` still works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remote_agent.spec import JobSpec, SpecError
from remote_agent.supervision.lines import LineSplitter
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for

# Draws like Keras' verbose=1 bar on a terminal: each frame erases the last one with as many "\b"
# as it had characters, then "\r", with ANSI colours; off a terminal it prints one line per epoch.
BAR = r"""
import sys
tty = sys.stdout.isatty()
print("tty:", tty, flush=True)
print("Epoch 1/1", flush=True)
prev = 0
for step in range(1, 6):
    frame = "\x1b[1m%d/5\x1b[0m \x1b[32m━━━━\x1b[0m 0s 3ms/step - loss: %.4f" % (step, 1.0 / step)
    if tty:
        sys.stdout.write("\b" * prev + "\r" + frame)
        sys.stdout.flush()
        prev = len(frame)
    elif step == 5:
        print(frame)
print()
"""

STOPPABLE = r"""
import signal, sys, time
def bye(signum, frame):
    print("stopping at", "tty" if sys.stdout.isatty() else "pipe", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def _values(job: str) -> list[dict]:
    return [o["values"] for o in map(json.loads, ok("metrics", "--json", job).splitlines()) if "values" in o]


def _inspect(job: str) -> dict:
    return json.loads(ok("inspect", "--json", job))


@pytest.mark.slow  # a real job under the real supervisor, ~5 s
def test_a_pty_job_draws_its_bar_frames_and_each_is_a_point(gpudeck_home: Path, workdir: Path) -> None:
    (workdir / "bar.py").write_text(BAR)
    job = ok("run", "--pty", "--name", "bar", "--", "python3", "bar.py", cwd=workdir).strip()
    wait_for(lambda: _inspect(job)["state"] == "exited", timeout=20, what="the job's end")
    assert "tty: True" in ok("logs", job)
    assert _values(job) == [{"step": s, "epoch": 1, "loss": round(1.0 / s, 4)} for s in range(1, 6)]


@pytest.mark.slow
def test_without_pty_the_same_job_sees_a_pipe(gpudeck_home: Path, workdir: Path) -> None:
    (workdir / "bar.py").write_text(BAR)
    job = ok("run", "--name", "bar", "--", "python3", "bar.py", cwd=workdir).strip()
    wait_for(lambda: _inspect(job)["state"] == "exited", timeout=20, what="the job's end")
    assert "tty: False" in ok("logs", job)
    assert _values(job) == [{"step": 5, "epoch": 1, "loss": 0.2}]


@pytest.mark.slow
def test_stop_reaches_a_pty_job_and_its_last_words_reach_the_log(gpudeck_home: Path, workdir: Path) -> None:
    (workdir / "loop.py").write_text(STOPPABLE)
    job = ok(
        "run", "--pty", "--name", "loop", "--grace", "30", "--", "python3", "loop.py", cwd=workdir
    ).strip()
    wait_for(lambda: "ready" in ok("logs", job), timeout=20, what="the job's first line")
    ok("stop", job, timeout=60)
    ended = _inspect(job)
    assert ended["state"] == "stopped", ended
    assert "stopping at tty" in ok("logs", job)


def test_backspaces_move_the_cursor_as_on_a_terminal() -> None:
    splitter = LineSplitter()
    lines = splitter.feed(b"1/5 - loss: 1.0000" + b"\b" * 30 + b"\r\x1b[1m2/5\x1b[0m - loss: 0.5000\n")
    assert [line for line in lines if line] == ["1/5 - loss: 1.0000", "2/5 - loss: 0.5000"]
    assert splitter.feed(b"ab\bc\r") == ["ac"]


def test_spec_pty_is_a_flag_left_out_when_false() -> None:
    base = {"id": "20261205-120000-abcdef", "name": "j", "argv": ["true"]}
    assert JobSpec.from_wire({**base, "pty": True}).to_wire()["pty"] is True
    assert "pty" not in JobSpec.from_wire({**base, "pty": False}).to_wire()
    with pytest.raises(SpecError, match=r"spec\.pty: expected true or false"):
        JobSpec.from_wire({**base, "pty": "yes"})
