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


def test_a_restart_or_a_recovery_continues_the_chain() -> None:
    """restart_of links (a restart, a managed job's recovery) chain as resizes do; before, only
    resized_from did, so a recovered job's --chain began at the recovery."""
    from tui.actions.find import Job
    from tui.commands.metrics import ancestors

    def job(job_id: str, **first: object) -> Job:
        return Job(job_id, "kept", [dict(first, id=job_id, node="0", host="a", state="exited")])

    a = job("20261205-100000-aaaaaa")
    b = job("20261205-100001-bbbbbb", restart_of=a.id)  # a managed recovery
    c = job("20261205-100002-cccccc", resized_from={"job": b.id, "nodes": 1})  # then a resize
    assert [j.id for j in ancestors([c, b, a], c)] == [a.id, b.id]
