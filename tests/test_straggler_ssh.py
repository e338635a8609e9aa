"""Issue 34 across two hosts over the real sshd: a 2-node job on box-a and box-b (each its own agent
and journal) whose node 1 sleeps longer between steps is named the straggler by `ps`, and box-b's
journal of node 1 gets the `straggler` event through its own agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.boxes import agent_dir, kill_boxes_jobs, two_boxes
from tests.support.node_journals import events, records
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for
from tests.test_straggler_job import SETTINGS, TRAINER


@pytest.mark.slow  # two hosts' agents deployed, then the judgement's windows: ~20 s
@pytest.mark.timeout(240)
def test_the_slow_node_on_the_other_host_is_named(
    ssh_home: SshHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SETTINGS.items():
        monkeypatch.setenv(name, value)
    two_boxes(ssh_home)
    work = tmp_path / "work"
    work.mkdir()
    (work / "slow").write_text("")  # node 1 is slow while it exists (TRAINER reads it in its work dir)
    try:
        job = ok(
            "run", "--host", "box-a,box-b", "--nodes", "2", "--launcher", "none",
            "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--workdir", str(work),
            "--grace", "1", "--", sys.executable, "-c", TRAINER, "0.05", "0.3",
            cwd=tmp_path, timeout=180,
        ).strip()  # fmt: skip
        obj = wait_for(
            lambda: (o := json.loads(ok("inspect", "--json", job, cwd=tmp_path)))["straggler"] and o,
            timeout=90,
            interval=0.5,
            what="a straggler",
        )
        assert obj["straggler"]["nodes"] == ["1"], obj["straggler"]
        assert {n["node"]: n["host"] for n in obj["nodes"]} == {"0": "box-a", "1": "box-b"}
        assert "running (straggler: node 1)" in ok("ps", cwd=tmp_path)
        said = wait_for(
            lambda: events(records(agent_dir(ssh_home, "box-b"), job, "1"), "straggler"),
            timeout=30,
            what="event",
        )
        assert said[0]["data"]["why"].startswith("node 1 at "), said
    finally:
        kill_boxes_jobs(ssh_home)
