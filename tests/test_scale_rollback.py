"""Issue 29, finding 12: a resize whose new job fails at once is rolled back to the old size from the
same checkpoint, saying why (before, the old job was stopped, the new one failed, nothing ran)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for
from tui.actions.rollback import rollback_onto

# fails at once on 3 nodes (as the reference trainer did when 3 did not divide its batch)
PICKY = (
    '[ "$GPUDECK_NNODES" = 3 ] && { echo "cannot run on 3 nodes" >&2; exit 3; }; '
    'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES"; exec sleep 300'
)


def test_the_rollback_goes_back_onto_the_hosts_a_failed_shrink_left() -> None:
    assert rollback_onto(["a", "b", "c"], ["a", "b"]) == ("c",)
    assert rollback_onto(["a", "a"], ["a", "a", "b"]) == ()


@pytest.mark.slow  # a stop, a failed relaunch, a rollback: ~8 s
def test_a_scale_whose_new_job_fails_at_once_is_rolled_back(gpudeck_home: Path, workdir: Path) -> None:
    (workdir / "ck").mkdir()
    job = ok(
        "run", "--name", "picky", "--grace", "5", "--nodes", "2", "--launcher", "none",
        "--", "bash", "-c", PICKY, "x", "--checkpoint-dir", "ck",
        cwd=workdir,
    ).strip()  # fmt: skip
    wait_for(lambda: "rank=1 of=2" in ok("logs", "--node", "1", job), timeout=20, what="node 1's line")
    r = gpudeck("scale", job, "+1", cwd=workdir, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "on 3 nodes failed within" in r.stderr and "rolled back to 2 nodes" in r.stderr, r.stderr
    [back] = [j for j in json.loads(ok("ps", "--json")) if j["name"] == "picky"]
    assert len(back["nodes"]) == 2 and back["id"] != job and back["id"] in r.stderr
    wait_for(lambda: "rank=1 of=2" in ok("logs", "--node", "1", back["id"]), timeout=20, what="back on 2")
    came = json.loads(ok("inspect", "--json", back["id"]))["resized_from"]
    assert came["nodes"] == 3  # it came from the failed 3-node job, by the same command and checkpoint
    ok("kill", back["id"])
