"""Logger files, end to end: a job that writes Lightning's lightning_logs/version_N/ under its
work dir (metrics.csv or event files) gets the logger's exact curve with no flag; a printed
stepless value of a logged series is not journaled again; `--no-logger-files` turns it off."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # jobs and CLI interpreters: seconds

# As Lightning runs: the version dir first (fit start), then the bar's frames (stepless values:
# the loss, and `acc` the logger does not give), then the logger's flush. An old version dir (a
# previous run's) is there before the job and must not be read.
CSV_TRAINER = """
import os, sys
d = "lightning_logs/version_1"
os.makedirs(d)
open(d + "/hparams.yaml", "w").close()
for loss, acc in ((0.9, 0.1), (0.7, 0.2), (0.55, 0.3), (0.5, 0.4)):
    print("Epoch 0/0 3/4 0:00:01 train_loss: %s acc: %s" % (loss, acc), flush=True)
with open(d + "/metrics.csv", "w") as f:
    f.write("epoch,step,train_loss,val_loss\\n0,0,0.9,\\n0,1,0.7,\\n0,2,0.55,\\n0,3,0.5,\\n0,3,,0.625\\n")
"""

EVENTS_TRAINER = """
import os
from tensorboardX import SummaryWriter
w = SummaryWriter("lightning_logs/version_0")
for step, loss in enumerate((0.9, 0.7, 0.55)):
    print("train_loss: %s" % loss, flush=True)
    w.add_scalar("train_loss", loss, step)
    w.add_scalar("epoch", 0, step)
w.close()
"""

LOGGED = [
    {"step": 1, "epoch": 0, "loss": 0.9},
    {"step": 2, "epoch": 0, "loss": 0.7},
    {"step": 3, "epoch": 0, "loss": 0.55},
    {"step": 4, "epoch": 0, "loss": 0.5, "val_loss": 0.625},
]


def metrics(job_id: str, cwd: Path) -> list[dict[str, object]]:
    out = gpudeck("metrics", "--json", job_id, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return [json.loads(line)["values"] for line in out.stdout.splitlines()]


def ran(workdir: Path, script: str, *flags: str) -> list[dict[str, object]]:
    (workdir / "train.py").write_text(script)
    out = gpudeck("run", *flags, "--", sys.executable, "train.py", cwd=workdir)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()

    def ended() -> bool:
        ps = json.loads(gpudeck("ps", "--all", "--json", cwd=workdir).stdout)
        return any(j["id"] == job_id and j["ended_at"] for j in ps)

    wait_for(ended, timeout=60, what="its end")
    return metrics(job_id, workdir)


def old_run(workdir: Path) -> None:
    old = workdir / "lightning_logs" / "version_0"
    old.mkdir(parents=True)
    (old / "metrics.csv").write_text("epoch,step,train_loss\n0,0,9.5\n")


def test_a_lightning_csv_logger_gives_the_exact_curve_and_printed_losses_are_not_doubled(
    gpudeck_home: Path, workdir: Path
) -> None:
    old_run(workdir)
    points = ran(workdir, CSV_TRAINER)
    assert [p for p in points if "step" in p] == LOGGED
    # the bar's stepless values: the loss is the logger's, `acc` (not logged) is kept as printed
    assert [p for p in points if "step" not in p] == [{"epoch": 0, "acc": a} for a in (0.1, 0.2, 0.3, 0.4)]


def by_step(points: list[dict[str, object]]) -> list[dict[str, object]]:
    """A step's values, from however many points carry them: a read can land between two of the
    step's scalars (the writer flushes `train_loss` before `epoch`), giving that step two points."""
    merged: dict[object, dict[str, object]] = {}
    for point in points:
        merged.setdefault(point.get("step"), {}).update(point)
    return list(merged.values())


def test_lightning_event_files_are_read_with_no_flag(gpudeck_home: Path, workdir: Path) -> None:
    points = ran(workdir, EVENTS_TRAINER)
    assert all("step" in p for p in points), points  # no printed stepless loss beside the logger's
    assert by_step(points) == [{"step": s + 1, "epoch": 0, "loss": v} for s, v in enumerate((0.9, 0.7, 0.55))]


def test_no_logger_files_reads_the_printed_output_alone(gpudeck_home: Path, workdir: Path) -> None:
    points = ran(workdir, CSV_TRAINER, "--no-logger-files")
    assert points == [
        {"epoch": 0, "loss": v, "acc": a} for v, a in ((0.9, 0.1), (0.7, 0.2), (0.55, 0.3), (0.5, 0.4))
    ]
