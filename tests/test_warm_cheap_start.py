"""Issue 33, cheap start with a warm connection: a warm `ps` and a warm `metrics JOB --json` load
only what they use (tests/test_cheap_start.py's lists), and no SSH code."""

from __future__ import annotations

import json

import pytest

from tests.support.waiting import wait_for
from tests.test_cheap_start import NOT_FOR_PS, NOT_FOR_READING, loaded_by, unwanted
from tests.test_warm_connections import Warm, ok, warm  # noqa: F401  (warm: the fixture)

SSH_CODE = ("paramiko", "cryptography", "textual", "boto3", "botocore")
POINTS = "for i in range(50): print(f'step={i} loss={1 / (i + 1):.4f}')"


@pytest.mark.slow  # CLI runs over SSH, a job on box
def test_a_warm_ps_and_metrics_load_only_what_they_use(warm: Warm) -> None:  # noqa: F811
    job = json.loads(ok("run", "--host", "box", "--json", "--", "python3", "-c", POINTS).stdout)["id"]
    wait_for(lambda: "exited" in ok("inspect", job).stdout, timeout=60, what="the job's end")
    ok("ps")  # the master up, and what the next command needs remembered
    ps = loaded_by("ps")
    # shutil: argparse's terminal width (help only); a local listing that writes its cache loads it
    assert unwanted(ps, (*NOT_FOR_PS, *SSH_CODE, "shutil")) == []
    metrics = loaded_by("metrics", job, "--json")
    assert "tui.commands.metrics" in metrics
    assert (
        unwanted(metrics, (*NOT_FOR_READING, *SSH_CODE, "logging", "concurrent.futures", "subprocess")) == []
    )
    assert warm.connections == 1
