"""Issue 34, the `restart` stall action: a stalled job is stopped gracefully and, once its end is
journaled, the same spec starts again as a new job (`restart_of` the old one) that goes on from its
checkpoint; a chain restarts at most `stall.restarts` times; multi-node jobs are refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from remote_agent.spec import SpecError, Stall
from remote_agent.supervision.stall_restart import restart_spec
from tests.conftest import gpudeck
from tests.support.jobs import journal
from tests.support.waiting import wait_for

OLD = "20261206-050000-aaaaaa"

# Steps from its checkpoint (a file in the work dir); the first run hangs at step 5 spinning a CPU
# (a stand-in for a collective that never ends), the run after it finishes at step 8.
RESUMES = """\
import os, sys, time
ckpt = "ckpt.txt"
start = int(open(ckpt).read()) if os.path.exists(ckpt) else 0
print(f"resumed from {start}", flush=True)
for step in range(start + 1, 9):
    print(f"step={step} loss={1.0 / step:.4f}", flush=True)
    open(ckpt, "w").write(str(step))
    if step == 5 and not os.path.exists("hung-once"):
        open("hung-once", "w").close()
        while True:
            sum(range(1000))
    time.sleep(0.1)
"""


def test_the_new_spec_goes_on_from_the_old_one_with_one_restart_fewer() -> None:
    old: dict[str, Any] = {
        "id": OLD,
        "name": "train",
        "node": "0",
        "argv": ["python", "t.py"],
        "created_at": 1.0,
        "gpus": {"count": 1},
        "env": {"CUDA_VISIBLE_DEVICES": "3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "SEED": "1"},
        "stall": {"after": 60.0, "action": "restart", "restarts": 2},
    }
    new = restart_spec(old, "20261206-050100-bbbbbb")
    assert new["id"] == "20261206-050100-bbbbbb" and new["restart_of"] == OLD
    assert new["name"] == "train" and new["argv"] == ["python", "t.py"] and "created_at" not in new
    assert new["stall"] == {"after": 60.0, "action": "restart", "restarts": 1}
    assert new["env"] == {"SEED": "1"}  # the old GPUs' assignment: the launch assigns again
    assert old["stall"]["restarts"] == 2  # the old spec is left as it was


def test_restarts_is_a_bounded_count() -> None:
    assert Stall.from_wire({"action": "restart", "restarts": 0}).restarts == 0
    assert Stall.from_wire({"action": "restart"}).restarts == 3
    for bad in (-1, 101, True, "3"):
        with pytest.raises(SpecError, match="stall.restarts"):
            Stall.from_wire({"action": "restart", "restarts": bad})


def test_a_multi_node_job_cannot_restart_on_a_stall(gpudeck_home: Path, workdir: Path) -> None:
    r = gpudeck("run", "--nodes", "2", "--stall-action", "restart", "--", "true", cwd=workdir)
    assert r.returncode == 2 and "--stall-action restart: one-node jobs only" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def _jobs() -> list[dict[str, Any]]:
    r = gpudeck("ps", "--all", "--json")
    return [j for j in json.loads(r.stdout) if j.get("name") == "resumes"]


@pytest.mark.slow  # a real job that hangs, is stopped and starts again
@pytest.mark.timeout(180)
def test_a_stalled_job_restarts_from_its_checkpoint(
    gpudeck_home: Path, agent_dir: Path, workdir: Path
) -> None:
    first = gpudeck(
        "run", "--name", "resumes", "--stall", "2s", "--stall-action", "restart",
        "--", sys.executable, "-c", RESUMES, cwd=workdir,
    ).stdout.strip()  # fmt: skip
    wait_for(lambda: len(_jobs()) == 2, timeout=120, what="the restarted job")
    second = next(j for j in _jobs() if j["id"] != first)
    assert second["restart_of"] == first
    wait_for(lambda: next(j for j in _jobs() if j["id"] == second["id"])["state"] == "exited", timeout=60,
             what="the restarted job's end")  # fmt: skip
    old = next(j for j in _jobs() if j["id"] == first)
    assert old["state"] == "stopped" and old["reason"].startswith("stalled: ")
    events = [r for r in journal(agent_dir, first) if r.get("kind") == "event"]
    restarted = [e["data"] for e in events if e.get("event") == "stall_restarted"]
    assert restarted == [{"job": second["id"], "restarts_left": 2}]
    out = gpudeck("logs", second["id"]).stdout
    assert "resumed from 5" in out and "step=6 " in out and "step=1 " not in out  # from its checkpoint
