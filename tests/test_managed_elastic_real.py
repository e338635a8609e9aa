"""Issue 31: a managed `--elastic 1:2` job whose node 1 is preempted (or whose host is lost) goes on at world size 1 while
the controller launches only the replacement, which joins the running rendezvous: the same job id,
node 0 never stopped, its world size 2 → 1 → 2 in the points. Real sshd hosts box-a/box-b/box-c
(spot hosts with fake metadata services), real torchrun (c10d) and the reference trainer on CPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.boxes import agent_dir, kill_boxes_jobs, ssh_config
from tests.support.cleanup import kill_all_jobs
from tests.support.metadata import FakeMetadata
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import TINY, json_lines, ok
from tests.support.waiting import wait_for
from tests.test_managed_multinode import node_end, spot  # noqa: F401  (spot: the boxes' fixture)
from tests.test_scale_elastic import resized
from tui.managed.records import ManagedDir

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable


def world_sizes(job: str, cwd: Path, nodes: tuple[str, ...]) -> list[tuple[int, int]]:
    """(step, world size) of the loss points the nodes' trainers printed, node after node (rank 0
    prints them: node 0's, then the joined node's once it holds rank 0)."""
    out = []
    for node in nodes:
        r = gpudeck("logs", "--node", node, job, cwd=cwd, timeout=60)
        out += [
            (p["step"], p["world_size"]) for p in json_lines(r.stdout) if "loss" in p and "world_size" in p
        ]
    return out


def changes(sizes: list[tuple[int, int]]) -> list[int]:
    """The world sizes in order, each run of the same size once."""
    out: list[int] = []
    for _, w in sizes:
        if not out or out[-1] != w:
            out.append(w)
    return out


@pytest.mark.slow  # three SSH hosts, torchrun's rendezvous twice re-formed: 1-3 min on a loaded machine
@pytest.mark.timeout(480)
@pytest.mark.parametrize("loss", ["preempted", "host lost"])
def test_a_lost_elastic_node_is_replaced_by_one_that_joins_the_running_job(
    loss: str,
    spot: dict[str, FakeMetadata],  # noqa: F811
    ssh_home: SshHome,
    tmp_path: Path,
) -> None:
    ck = tmp_path / "ck"
    try:
        job = ok(
            "run", "--managed", "--name", "el2", "--host", "box-a,box-b", "--nodes", "2",
            "--elastic", "1:2", "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
            "--workdir", str(REPO), "--grace", "30", "--fallback", "box-a,box-b,box-c", "--lost-after", "0",
            "--", PY, "-m", "trainer", "--steps", "100000", *TINY, "--checkpoint-dir", str(ck),
            cwd=tmp_path,
        ).strip()  # fmt: skip
        gpudeck("kill", "policy", cwd=tmp_path)  # this test runs the controller's passes itself
        wait_for(
            lambda: any(w == 2 and s >= 3 for s, w in world_sizes(job, tmp_path, ("0", "1"))),
            timeout=200,
            interval=1,
            what="steps at world size 2",
        )

        if loss == "preempted":
            spot["box-b"].serve_notice(seconds=60)
            end = wait_for(lambda: node_end(ssh_home, "box-b", job, 1), timeout=90, what="node 1's end")
            assert (end["state"], end["reason"]) == ("stopped", "preempted"), end
        else:
            kill_all_jobs(agent_dir(ssh_home, "box-b"))  # the instance is gone, with its processes
            ssh_config(ssh_home, down=("box-b",))  # and its address answers nothing
        # the survivor goes on alone, without being stopped or relaunched
        wait_for(
            lambda: changes(world_sizes(job, tmp_path, ("0",)))[-1:] == [1],
            timeout=150,
            interval=1,
            what="node 0 training at world size 1",
        )

        out = ok("policy", "run", "--once", cwd=tmp_path, timeout=200)
        assert "managed  el2" in out and "recovered" in out, out
        [m] = ManagedDir(ssh_home.gpudeck_home / "managed").all()
        assert m.current == job and m.node_hosts == ("box-a", "box-b", "box-c")  # one job, the move recorded
        assert m.recoveries[0]["joined"] == ["2"] and m.recoveries[0]["elastic"] is True

        wait_for(
            lambda: changes(world_sizes(job, tmp_path, ("0", "2"))) == [2, 1, 2],
            timeout=200,
            interval=1,
            what="world size 2 again with the node that joined",
        )
        assert node_end(ssh_home, "box-a", job, 0) is None  # node 0 was never stopped
        # the chart's marker: node 0 journaled the join's regroup with the recovery as its why
        said = wait_for(
            lambda: [r for r in resized(job, tmp_path) if r["to"] == 2 and r["from"] == 1],
            timeout=60,
            interval=1,
            what="the join's resized record",
        )
        assert said[0]["why"].startswith("recovery: node 1: "), said
        looked = json.loads(ok("inspect", "--json", job, cwd=tmp_path))
        nodes = {n["node"]: (n["host"], n["state"]) for n in looked["nodes"]}
        left = ("box-b", "stopped") if loss == "preempted" else ("box-b", "unreachable")
        assert nodes == {"0": ("box-a", "running"), "1": left, "2": ("box-c", "running")}
        assert looked["state"] == "running", looked  # the lost node left the job: not degraded
        shown = ok("inspect", job, cwd=tmp_path)
        assert "elastic: node 2 on box-c joined the running job in place of node 1 on box-b" in shown, shown
        # a second pass finds nothing to do: the departed node 1 is no second loss
        out = ok("policy", "run", "--once", cwd=tmp_path, timeout=120)
        assert len(ManagedDir(ssh_home.gpudeck_home / "managed").all()[0].recoveries) == 1, out
    finally:
        gpudeck("kill", "policy", cwd=tmp_path)
        kill_boxes_jobs(ssh_home)
