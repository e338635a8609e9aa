"""Issue 34, the likely hang's node, with real processes: a 2-node job whose node 1 stops at step
20 while node 0 gets to step 21 and waits (a stand-in for a collective node 1 never joins) is
stalled on both nodes, and `ps`, `inspect` and node 1's journal name node 1 as the likely hang."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.node_journals import events, records
from tests.support.waiting import wait_for

TRAINER = """
import json, os, time
last = 21 if os.environ["GPUDECK_NODE_RANK"] == "0" else 20
for step in range(last + 1):
    print(json.dumps({"step": step, "loss": 1.0}), flush=True)
    time.sleep(0.02)
time.sleep(300)
"""


@pytest.mark.slow  # a 2 s stall bound on two nodes: ~6 s
@pytest.mark.timeout(120)
def test_the_node_behind_is_named_the_likely_hang(agent_dir: Path, workdir: Path) -> None:
    run = gpudeck(
        "run", "--name", "hang2", "--nodes", "2", "--launcher", "none", "--stall", "2s", "--grace", "1",
        "--", sys.executable, "-c", TRAINER,
        cwd=workdir,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    job = run.stdout.strip()
    try:
        obj = wait_for(
            lambda: (
                (o := json.loads(gpudeck("inspect", "--json", job, cwd=workdir).stdout))["likely_hang"] and o
            ),
            timeout=60,
            interval=0.5,
            what="the likely hang",
        )
        assert obj["stalled"] and obj["likely_hang"]["node"] == "1", obj["likely_hang"]
        assert obj["likely_hang"]["why"] == "node 1 stopped at step 20; node 0 waits at step 21"
        ps = gpudeck("ps", cwd=workdir).stdout
        assert "running (stalled)" in ps and "likely hang: node 1 stopped at step 20" in ps, ps
        shown = gpudeck("inspect", job, cwd=workdir).stdout
        assert "  likely hang: node 1 stopped at step 20; node 0 waits at step 21" in shown, shown
        said = wait_for(
            lambda: events(records(agent_dir, job, "1"), "likely_hang"), timeout=30, what="the event"
        )
        assert said[0]["data"]["why"].startswith("node 1 stopped at step 20"), said
        assert not events(records(agent_dir, job, "0"), "likely_hang")
    finally:
        gpudeck("kill", job, cwd=workdir)
