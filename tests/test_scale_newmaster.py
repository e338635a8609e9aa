"""Losing node 0 (its host unreachable): `scale -1` in restart mode relaunches with node 0 on a host
that survived, at that host's address (its route to the old master) and a port free there, checked
by the pre-flight again; training resumes from the checkpoint. Two SSH hosts (one sshd, two
aliases); the reference trainer under torchrun on CPU/gloo; box-a "goes down" when its alias is
pointed at a closed port (its processes run on, unseen, and still hold the old master port)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.boxes import kill_boxes_jobs, ssh_config, two_boxes
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import TINY, ok, points
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient


def test_the_new_master_learns_its_route_address_and_a_free_port(client: AgentClient) -> None:
    closed = free_port()
    gone = client.request("probe", addr="127.0.0.1", port=closed, count=1)
    assert not gone["reachable"] and gone["local_addr"] == "127.0.0.1"  # the route, though nothing answers
    held = client.request("listen", port=0, seconds=5)
    assert 0 < held["port"] <= 65535 and held["token"]
    got = client.request("probe", addr="127.0.0.1", port=held["port"], count=1)
    assert got["reachable"] and got["token"] == held["token"]
    assert client.request("unlisten", port=held["port"]) == {"was_listening": True}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_losing_node_0_moves_the_master_to_a_surviving_host(ssh_home: SshHome, tmp_path: Path) -> None:
    two_boxes(ssh_home)
    ck, port = tmp_path / "ck", free_port()
    try:
        job = ok(
            "run",
            "--name",
            "lost0",
            "--grace",
            "30",
            "--nodes",
            "2",
            "--host",
            "box-a,box-b",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(port),
            "--",
            "python3",
            "-m",
            "trainer",
            "--steps",
            "100000",
            *TINY,
            "--checkpoint-dir",
            str(ck),
            cwd=tmp_path,
            timeout=180,
        ).strip()
        wait_for(
            lambda: any((p.get("step") or 0) >= 3 for p in points(job, tmp_path)),
            timeout=150,
            interval=0.5,
            what="step 3 on 2 nodes",
        )
        ssh_config(ssh_home, down=("box-a",))  # node 0's host is gone; its processes run on, unseen

        [listed] = [j for j in json.loads(gpudeck("ps", "--json", cwd=tmp_path).stdout) if j["id"] == job]
        assert listed["state"] == "degraded" and listed["why"].startswith("node 0 on box-a unreachable"), (
            listed
        )
        r = gpudeck("scale", job, "-1", cwd=tmp_path, timeout=180)
        assert r.returncode == 0, r.stderr
        new = r.stdout.strip()
        assert "2 → 1 nodes" in r.stderr and "dropped node 0 on box-a unreachable" in r.stderr, r.stderr
        obj = json.loads(ok("inspect", "--json", new, cwd=tmp_path))
        assert [(n["node"], n["host"]) for n in obj["nodes"]] == [("0", "box-b")]
        mn = obj["multinode"]
        assert mn["hosts"] == ["box-b"] and mn["master_addr"] == "127.0.0.1" and mn["master_port"] != port, mn
        assert f"scale: node 0 moves from box-a to box-b: master 127.0.0.1:{mn['master_port']}" in r.stderr, (
            r.stderr
        )
        # the job resumes on box-b from the newest checkpoint, at world size 1
        resumed = wait_for(
            lambda: [p for p in points(new, tmp_path) if p.get("event") == "resumed"],
            timeout=150,
            interval=0.5,
            what="the resumed event",
        )
        assert resumed[0]["world_size"] == 1 and resumed[0]["step"] >= 3, resumed
        wait_for(
            lambda: any((p.get("step") or 0) > resumed[0]["step"] for p in points(new, tmp_path)),
            timeout=120,
            interval=0.5,
            what="a step after the resume",
        )
        assert "stopped" in ok("stop", new, cwd=tmp_path, timeout=120)
    finally:
        kill_boxes_jobs(ssh_home)
