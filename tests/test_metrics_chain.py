"""`gpudeck metrics --chain JOB`: a restart-mode resize chain's points, oldest job first, each
--json point with its job id (issue 14: one continuous loss series through resizes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.resuming import RESUMING
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for


def _steps(ref: str, *flags: str) -> list[tuple[str | None, float]]:
    lines = ok("metrics", "--json", *flags, ref).splitlines()
    return [(o.get("job"), o["values"]["step"]) for o in map(json.loads, lines) if "values" in o]


@pytest.mark.slow  # ~6 s: a 2-node job, then its resize
def test_metrics_chain_prints_the_ancestors_points_first_each_with_its_job(
    gpudeck_home: Path, workdir: Path
) -> None:
    (workdir / "ck").mkdir()
    old = ok(
        "run",
        "--name",
        "chained",
        "--grace",
        "5",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--",
        "bash",
        "-c",
        RESUMING,
        "x",
        "--checkpoint-dir",
        "ck",
        cwd=workdir,
    ).strip()
    wait_for(lambda: len(_steps(old)) == 5, timeout=20, what="the first job's 5 points")
    ok("scale", old, "-1", cwd=workdir)
    new = json.loads(ok("inspect", "--json", "chained"))["id"]
    assert new != old
    wait_for(lambda: len(_steps(new)) == 5, timeout=20, what="the resized job's 5 points")
    # without --chain: the job's own points, untagged, as before
    assert _steps(new) == [(None, s) for s in (4, 5, 6, 7, 8)]
    assert _steps(new, "--chain") == [(old, s) for s in (1, 2, 3, 4, 5)] + [(new, s) for s in (4, 5, 6, 7, 8)]
    text = ok("metrics", "--chain", new)
    assert (
        text.index(f"-- job {old} (2 nodes) --")
        < text.index("step=1")
        < text.index(f"-- job {new} (1 node) --")
    )
    ok("kill", new)
