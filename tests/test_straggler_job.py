"""Issue 34, the slow node, with real processes: a 2-node job (`--nodes 2 --launcher none`, one
supervisor and one journal per node) whose node 1 sleeps longer between steps is named the
straggler in `ps`, `ps --json` and `inspect` (with each node's rate) and by a `straggler` event
in node 1's journal, and cleared (`unstraggler`) once it catches up; a job of equal nodes is
never named. Test-sized judgement: 2 s windows, 4 s sustain (the
GPUDECK_STRAGGLER_* settings, read where the judgement runs: here the CLI)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.support.node_journals import events, records
from tests.support.waiting import wait_for

SETTINGS = {"GPUDECK_STRAGGLER_WINDOW": "2", "GPUDECK_STRAGGLER_SUSTAIN": "4"}
WINDOWS = 3  # ceil(4 / 2) + 1 (remote_agent/pace/straggler.py)

# Node 1 sleeps `slow` s between steps while the file `slow` exists in the work dir, else `fast`.
TRAINER = """
import json, os, sys, time
rank, fast, slow = os.environ["GPUDECK_NODE_RANK"], float(sys.argv[1]), float(sys.argv[2])
step = 0
while True:
    print(json.dumps({"step": step, "loss": 1.0}), flush=True)
    step += 1
    time.sleep(slow if rank == "1" and os.path.exists("slow") else fast)
"""


def launch(workdir: Path, fast: float, slow: float) -> str:
    run = gpudeck(
        "run", "--name", "pace", "--nodes", "2", "--launcher", "none", "--grace", "1",
        "--", sys.executable, "-c", TRAINER, str(fast), str(slow),
        cwd=workdir,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def job_json(job: str, workdir: Path) -> dict[str, Any]:
    got = gpudeck("inspect", "--json", job, cwd=workdir, env=SETTINGS)
    assert got.returncode == 0, got.stderr
    obj: dict[str, Any] = json.loads(got.stdout)
    return obj


def judged(obj: dict[str, Any]) -> bool:
    """Both nodes have a rate and history enough for the judgement's windows."""
    return obj["state"] == "running" and all(
        n["step_rate"] is not None and n["step_rate"] > 0 for n in obj["nodes"]
    )


@pytest.mark.slow  # the judgement needs its windows of history: ~10 s
@pytest.mark.timeout(120)
def test_the_node_sleeping_between_steps_is_named_and_cleared_when_it_catches_up(
    agent_dir: Path, workdir: Path
) -> None:
    (workdir / "slow").write_text("")
    job = launch(workdir, fast=0.05, slow=0.3)
    try:
        obj = wait_for(
            lambda: (o := job_json(job, workdir))["straggler"] and o,
            timeout=60,
            interval=0.5,
            what="a straggler",
        )
        assert obj["straggler"]["nodes"] == ["1"] and obj["straggler"]["measure"] == "steps/s"
        assert obj["straggler"]["why"].startswith("node 1 at "), obj["straggler"]
        rates = {n["node"]: n["step_rate"] for n in obj["nodes"]}
        assert rates["1"] < 0.75 * rates["0"], rates

        ps = gpudeck("ps", cwd=workdir, env=SETTINGS)
        assert "running (straggler: node 1)" in ps.stdout, ps.stdout
        shown = gpudeck("inspect", job, cwd=workdir, env=SETTINGS).stdout
        assert "  straggler: node 1 at " in shown and "steps/s vs " in shown, shown
        table = shown.split("pace (steps/s and GPU over the last window):")[1]
        assert "straggler" in next(line for line in table.splitlines() if line.strip().startswith("1 ")), (
            shown
        )

        # the look that named it told node 1's agent: its supervisor journals the judgement
        named = wait_for(
            lambda: events(records(agent_dir, job, "1"), "straggler"), timeout=30, what="the event"
        )
        assert named[0]["data"]["why"].startswith("node 1 at "), named
        assert not events(records(agent_dir, job, "0"), "straggler")

        (workdir / "slow").unlink()  # node 1 catches up
        wait_for(
            lambda: (o := job_json(job, workdir))["state"] == "running" and o["straggler"] is None,
            timeout=60,
            interval=0.5,
            what="the straggler cleared",
        )
        wait_for(lambda: events(records(agent_dir, job, "1"), "unstraggler"), timeout=30, what="unstraggler")
        assert len(events(records(agent_dir, job, "1"), "straggler")) == 1  # once, however many looks
    finally:
        gpudeck("kill", job, cwd=workdir)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_job_of_equal_nodes_is_never_named(agent_dir: Path, workdir: Path) -> None:
    job = launch(workdir, fast=0.1, slow=0.1)
    try:
        first = wait_for(
            lambda: judged(o := job_json(job, workdir)) and o, timeout=60, interval=0.5, what="rates"
        )
        # from here each look covers full windows of both nodes' history: none may name anyone
        seen = [first]
        wait_for(
            lambda: seen.append(job_json(job, workdir)) or len(seen) > 2 * WINDOWS,
            timeout=90,
            interval=0.5,
            what="looks over several windows",
        )
        assert [o["straggler"] for o in seen] == [None] * len(seen), [o["straggler"] for o in seen]
        assert "straggler" not in gpudeck("ps", cwd=workdir, env=SETTINGS).stdout
        assert not any(events(records(agent_dir, job, n), "straggler") for n in "01")
    finally:
        gpudeck("kill", job, cwd=workdir)
