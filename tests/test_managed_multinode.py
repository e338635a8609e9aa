"""Issue 31's Done-when: a managed 2-node spot job survives a preemption of either node and a lost
host, with one chain, one chart and one cost. Real sshd hosts box-a/box-b/box-c (one sshd, three
agent dirs), each a spot host (`provider = aws`) whose notice comes from its own fake metadata
service; the nodes share a work dir where rank 0 "checkpoints" (tests/support/resuming.py: steps 1-5,
then 4-8 after a resume). Only the lost node moves to box-c; the other keeps its host."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.support.boxes import agent_dir, kill_boxes_jobs, ssh_config, three_boxes
from tests.support.cleanup import kill_all_jobs
from tests.support.metadata import FakeMetadata, fake_metadata
from tests.support.resuming import RESUMING
from tests.support.sshd import SshHome, free_port
from tests.support.waiting import wait_for
from tui.fleet.states import ENDED
from tui.managed.records import ManagedDir

BOXES = ("box-a", "box-b")  # node 0's host, node 1's


@pytest.fixture
def spot(ssh_home: SshHome) -> Iterator[dict[str, FakeMetadata]]:
    """box-a, box-b, box-c as spot hosts, each with its own fake metadata service."""
    with ExitStack() as stack:
        metas = {b: stack.enter_context(fake_metadata()) for b in ("box-a", "box-b", "box-c")}
        three_boxes(
            ssh_home,
            {
                b: {"provider": "aws", "metadata_endpoint": m.url, "price_per_hour": 3.6}
                for b, m in metas.items()
            },
        )
        yield metas


def ok(*args: str, cwd: Path, timeout: float = 60) -> str:
    r = gpudeck(*args, cwd=cwd, timeout=timeout)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def steps(ref: str, cwd: Path) -> list[tuple[str | None, float]]:
    r = gpudeck("metrics", "--json", "--chain", ref, cwd=cwd)
    points = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    return [(p.get("job"), p["values"]["step"]) for p in points if "values" in p]


def node_end(ssh_home: SshHome, box: str, job: str, node: int) -> dict[str, Any] | None:
    """The node's final state record, read from its journal on its host (None while it runs)."""
    journal = agent_dir(ssh_home, box) / "jobs" / job / str(node) / "events.jsonl"
    records = [json.loads(x) for x in journal.read_text().splitlines() if x.endswith("}")]
    ends = [r for r in records if r.get("kind") == "state" and r.get("state") in ENDED]
    return ends[-1] if ends else None


@pytest.mark.slow  # three SSH hosts, a 2-node job and its recovery: 70-120 s each on a loaded machine
@pytest.mark.timeout(480)
@pytest.mark.parametrize("loss", ["node 0 preempted", "node 1 preempted", "node 1's host lost"])
def test_a_managed_two_node_spot_job_goes_on_with_only_the_lost_node_replaced(
    loss: str, spot: dict[str, FakeMetadata], ssh_home: SshHome, tmp_path: Path
) -> None:
    lost = int(loss[len("node ")])
    (tmp_path / "ck").mkdir()
    try:
        first = ok(
            "run", "--managed", "--name", "spot2", "--host", "box-a,box-b", "--nodes", "2",
            "--launcher", "none", "--master-addr", "127.0.0.1",
            "--master-port", str(free_port()), "--workdir", str(tmp_path), "--grace", "5",
            "--fallback", "box-a,box-b,box-c", "--lost-after", "0", "--", "bash", "-c", RESUMING,
            cwd=tmp_path,
        ).strip()  # fmt: skip
        gpudeck("kill", "policy", cwd=tmp_path)  # this test runs the controller's passes itself
        wait_for(lambda: len(steps(first, tmp_path)) == 5, timeout=60, what="the first job's 5 steps")

        if "preempted" in loss:
            spot[BOXES[lost]].serve_notice(seconds=40)
            end = wait_for(
                lambda: node_end(ssh_home, BOXES[lost], first, lost), timeout=60, what=f"node {lost}'s end"
            )
            assert (end["state"], end["reason"], end["notice"]["provider"]) == (
                "stopped",
                "preempted",
                "aws",
            ), end
            assert node_end(ssh_home, BOXES[1 - lost], first, 1 - lost) is None  # the other goes on
        else:
            kill_all_jobs(agent_dir(ssh_home, "box-b"))  # the instance is gone, with its processes
            ssh_config(ssh_home, down=("box-b",))  # and its address answers nothing

        out = ok("policy", "run", "--once", cwd=tmp_path, timeout=150)
        assert "managed  spot2" in out and "recovered" in out, out

        # Only the lost node moved; the other kept its host.
        [m] = ManagedDir(ssh_home.gpudeck_home / "managed").all()
        expected = list(BOXES)
        expected[lost] = "box-c"
        assert list(m.node_hosts) == expected and m.recoveries[0]["from"] == first
        assert m.recoveries[0]["nodes"] == [lost] and m.recoveries[0]["to_host"] == "box-c"
        new = m.current
        job = json.loads(ok("inspect", "--json", new, cwd=tmp_path))
        assert job["restart_of"] == first and job["name"] == "spot2"  # one chain, one name
        assert {n["node"]: n["host"] for n in job["nodes"]} == {"0": expected[0], "1": expected[1]}
        shown = ok("inspect", new, cwd=tmp_path)
        assert f"recovered {first} on {BOXES[lost]} → {new} on box-c: node {lost}: " in shown

        # One chart: the first job's steps, then the recovered job's from its checkpoint.
        wait_for(lambda: len(steps(new, tmp_path)) == 10, timeout=60, what="the recovered job's steps")
        assert steps(new, tmp_path) == [(first, s) for s in (1, 2, 3, 4, 5)] + [
            (new, s) for s in (4, 5, 6, 7, 8)
        ]

        # One cost: the chain's jobs once each, and its recovery line.
        report = json.loads(ok("cost", "--json", cwd=tmp_path, timeout=120))
        [c] = report["chains"]
        assert c["jobs"] == [first, new] and c["recoveries"] == 1 and c["name"] == "spot2"
        by_id = {j["id"]: j for j in report["jobs"]}
        assert c["accrued_usd"] == pytest.approx(
            by_id[first]["accrued_usd"] + by_id[new]["accrued_usd"], abs=1e-5
        )
        assert (
            c["recovery_usd"] == pytest.approx(by_id[first]["accrued_usd"], abs=1e-5)
            and c["recovery_usd"] > 0
        )
        text = ok("cost", cwd=tmp_path, timeout=120)
        assert f"chain spot2 ({first}): 2 jobs" in text and "recovery: 1 recovery" in text

        journal = [
            json.loads(x) for x in (ssh_home.gpudeck_home / "policy-journal.jsonl").read_text().splitlines()
        ]
        assert [r["outcome"] for r in journal if r.get("kind") == "managed"] == ["recovering", "recovered"]
    finally:
        gpudeck("kill", "policy", cwd=tmp_path)
        kill_boxes_jobs(ssh_home)
