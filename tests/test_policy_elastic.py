"""`policy run` grows a job launched with `--elastic` through the elastic path: the same job id, a
third node joining torchrun's rendezvous, training going on at world size 3 — no stop, no new job.
The real CLI, agent, torchrun and trainer on CPU/gloo."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.trainer_runs import TINY, ok, points
from tests.support.waiting import wait_for

PY = sys.executable


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_policy_run_grows_an_elastic_job_without_a_new_job(
    gpudeck_home: Path, workdir: Path, tmp_path: Path
) -> None:
    # `step` is a number the trainer prints: past step 2 the rule asks one more node, at most 3
    (gpudeck_home / "policies.toml").write_text(
        '[[rule]]\nname = "grow"\nkind = "metric"\njobs = "elastic-*"\nmetric = "step"\nabove = 2\nadd = 1\nmax = 3\n'
    )
    job = ok(
        "run",
        "--name",
        "elastic-yolo",
        "--grace",
        "30",
        "--nodes",
        "2",
        "--elastic",
        "1:3",
        "--",
        PY,
        "-m",
        "trainer",
        "--steps",
        "100000",
        *TINY,
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        cwd=workdir,
    ).strip()
    try:
        wait_for(
            lambda: any(p.get("world_size") == 2 and p.get("step", 0) >= 3 for p in points(job, workdir)),
            timeout=150,
            interval=0.5,
            what="steps at world size 2",
        )
        out = ok("policy", "run", "--once", cwd=workdir, timeout=240)

        [intent, record] = [
            json.loads(line) for line in (gpudeck_home / "policy-journal.jsonl").read_text().splitlines()
        ]
        assert intent["outcome"] == "intent" and intent["intent_id"] == record["intent_id"]
        assert (record["rule"], record["from"], record["to"], record["outcome"]) == (
            "grow",
            2,
            3,
            "applied",
        ), record
        assert record["new_job"] == job, record  # elastic: the same job, a node joined
        assert f"grow  elastic-yolo ({job})  2 → 3  scale [applied → {job}]" in out
        wait_for(
            lambda: any(p.get("world_size") == 3 for p in points(job, workdir)),
            timeout=180,
            interval=0.5,
            what="a step at world size 3",
        )
        nodes = json.loads(ok("inspect", "--json", job, cwd=workdir))["nodes"]
        assert [(n["node"], n["state"]) for n in nodes] == [
            ("0", "running"),
            ("1", "running"),
            ("2", "running"),
        ]
        assert ok("policy", "run", "--once", cwd=workdir, timeout=240) == ""  # at max 3 now: nothing more
    finally:
        ok("kill", job, cwd=workdir)
