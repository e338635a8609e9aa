"""Restart-once holds for a multi-node job as a whole (#11, finding 4): two restarts at once of a
2-node job make one new job with both nodes; the other is refused naming it, touching no node."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for


def ps_all(workdir: Path) -> list[dict]:
    return json.loads(gpudeck("ps", "--all", "--json", cwd=workdir).stdout)


@pytest.mark.slow
def test_two_restarts_of_a_two_node_job_make_one_job_with_both_nodes(
    gpudeck_home: Path, workdir: Path
) -> None:
    run = gpudeck("run", "--name", "pair", "--nodes", "2", "--launcher", "none", "--", "true", cwd=workdir)
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    wait_for(
        lambda: any(j["id"] == job_id and j["state"] == "exited" for j in ps_all(workdir)),
        timeout=30,
        what="exited",
    )
    both = [
        subprocess.Popen(
            [sys.executable, "-m", "tui", "restart", job_id],
            cwd=workdir,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=90), p.stdout.read(), p.stderr.read()) for p in both]  # type: ignore[union-attr]
    ok = [r for r in results if r[0] == 0]
    refused = [r for r in results if r[0] != 0]
    assert len(ok) == 1 and len(refused) == 1, results
    new_id = ok[0][1].strip()
    # refused by the job-level claim, whether it came while the restart ran or after it
    assert (
        f"job {job_id} was already restarted as {new_id}" in refused[0][2]
        or f"a restart is under way (as {new_id}" in refused[0][2]
    ), refused
    pairs = {j["id"]: j for j in ps_all(workdir) if j["name"] == "pair"}
    assert sorted(pairs) == sorted([job_id, new_id])
    assert [n["node"] for n in pairs[new_id]["nodes"]] == ["0", "1"]  # every node of the one new job
    # Each old node names the same new job, and no node was restarted twice.
    for node in ("0", "1"):
        marker = json.loads(
            (gpudeck_home / "local-agent" / "jobs" / job_id / node / "restarted.json").read_text()
        )
        assert marker["restarted_as"] == new_id
