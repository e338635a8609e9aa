"""Issue 29, finding 12: `+` on the reference trainer with its default `--batch-size 32`, 2 → 3
nodes, stopped the job and relaunched one that failed at once (32 is not divisible by 3). The
pre-flight refuses it before anything stops; the job trains on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.trainer_runs import TINY, json_lines, ok
from tests.support.waiting import wait_for
from tui.actions.batch_fit import trainer_batch

PY = sys.executable


def test_the_reference_trainers_batch_is_read_from_its_command() -> None:
    assert trainer_batch([PY, "-m", "trainer", "--steps", "3"]) == 32
    assert trainer_batch([PY, "-u", "-m", "trainer", "--batch-size=48"]) == 48
    assert trainer_batch([PY, "-m", "trainer", "--batch-size", "8", "--batch-size", "12"]) == 12
    assert trainer_batch([PY, "-m", "mytrain", "--batch-size", "7"]) is None


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_scale_whose_world_size_does_not_divide_the_batch_is_refused_before_the_stop(
    gpudeck_home: Path, workdir: Path, tmp_path: Path
) -> None:
    job = ok(
        "run", "--name", "fit", "--grace", "30", "--nodes", "2", "--",
        PY, "-m", "trainer", "--steps", "100000", *TINY, "--batch-size", "32",
        "--checkpoint-dir", str(tmp_path / "ck"),
        cwd=workdir,
    ).strip()  # fmt: skip
    wait_for(
        lambda: any((p.get("step") or 0) >= 1 for p in json_lines(ok("logs", "--node", "0", job))),
        timeout=120,
        interval=0.5,
        what="step 1 on 2 nodes",
    )
    r = gpudeck("scale", job, "+1", timeout=180)
    assert r.returncode == 2, r.stderr
    assert "--batch-size 32 is not divisible by the new world size 3" in r.stderr and "1, 2, 4" in r.stderr
    assert json.loads(ok("inspect", "--json", job))["state"] == "running"  # still training, not stopped
    ok("kill", job)
