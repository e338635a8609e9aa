"""TensorBoard in, end to end: a run that prints nothing but logs to TensorBoard gets a curve.
`gpudeck run --tensorboard LOGDIR` and `gpudeck watch --tensorboard LOGDIR` (no log file at all);
`gpudeck metrics --json` returns what the writers logged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from tests.conftest import gpudeck
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # jobs and CLI interpreters: seconds

# A training loop that logs only to TensorBoard (torch's writer), never to stdout.
SILENT_TRAINER = """
import sys
from torch.utils.tensorboard import SummaryWriter
w = SummaryWriter(sys.argv[1])
for step in range(1, 6):
    w.add_scalar("train/loss", 1.0 / 2 ** step, step)
    w.add_scalar("train/learning_rate", 0.5, step)
w.close()
"""


def metrics(job_id: str, cwd: Path) -> list[dict[str, object]]:
    out = gpudeck("metrics", "--json", job_id, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return [json.loads(line)["values"] for line in out.stdout.splitlines()]


def ended(job_id: str, cwd: Path) -> bool:
    out = gpudeck("ps", "--all", "--json", cwd=cwd)
    return any(j["id"] == job_id and j["ended_at"] for j in json.loads(out.stdout))


def test_a_run_that_prints_nothing_gets_its_tensorboard_curve(gpudeck_home: Path, workdir: Path) -> None:
    (workdir / "train.py").write_text(SILENT_TRAINER)
    out = gpudeck("run", "--tensorboard", "tb", "--", sys.executable, "train.py", "tb/run1", cwd=workdir)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    wait_for(lambda: ended(job_id, workdir), timeout=60, what="its end")
    assert metrics(job_id, workdir) == [{"step": s, "loss": 1.0 / 2**s, "lr": 0.5} for s in range(1, 6)]


def test_watch_of_a_logdir_alone_follows_it_as_it_grows(gpudeck_home: Path, workdir: Path) -> None:
    logdir = workdir / "runs"
    out = gpudeck("watch", "--tensorboard", str(logdir), "--name", "tbonly", cwd=workdir)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    try:
        # tensorboardX's flush() hands off to a thread: close() is what writes for sure
        writer = SummaryWriter(str(logdir / "exp"))
        writer.add_scalar("loss", 2.0, 1)
        writer.add_scalar("my_metric", 7.0, 1)  # a tag the parser does not know: kept as is
        writer.close()
        wait_for(lambda: metrics(job_id, workdir) == [{"step": 1, "loss": 2.0, "my_metric": 7.0}], timeout=30)
        writer = SummaryWriter(str(logdir / "exp"))  # a second file in the run's dir, as a resumed run makes
        writer.add_scalar("loss", 1.5, 2)
        writer.close()
        wait_for(lambda: len(metrics(job_id, workdir)) == 2, timeout=30, what="the second point")
        assert metrics(job_id, workdir)[1] == {"step": 2, "loss": 1.5}  # read on, never again from 0
    finally:
        gpudeck("stop", job_id, cwd=workdir)
    ps = json.loads(gpudeck("ps", "--all", "--json", cwd=workdir).stdout)
    assert [j["name"] for j in ps if j["id"] == job_id] == ["tbonly"]


def test_watch_without_a_file_or_a_logdir_is_a_usage_error(gpudeck_home: Path, workdir: Path) -> None:
    out = gpudeck("watch", cwd=workdir)
    assert out.returncode == 2 and "--tensorboard LOGDIR" in out.stderr
