"""A node whose host becomes unreachable mid-run: the job is `degraded` with the reason, `scale -1`
drops that node and training continues from the checkpoint on the hosts left. Two SSH hosts (one
sshd, two aliases); the reference trainer under torchrun on CPU/gloo; box-b "goes down" when its
alias is pointed at a closed port."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.boxes import kill_boxes_jobs, ssh_config, two_boxes
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import TINY, ok, points
from tests.support.waiting import wait_for
from tui.errors import EXIT_HOST


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_unreachable_node_degrades_the_job_and_minus_one_drops_it(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    two_boxes(ssh_home)
    ck = tmp_path / "ck"
    try:
        job = ok(
            "run",
            "--name",
            "deg",
            "--grace",
            "30",
            "--nodes",
            "2",
            "--host",
            "box-a,box-b",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(free_port()),
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
        ssh_config(ssh_home, down=("box-b",))  # box-b's host is gone; its processes run on, unseen

        ps = gpudeck("ps", "--json", cwd=tmp_path)
        assert ps.returncode == EXIT_HOST and "skipping a host: host box-b unreachable" in ps.stderr, (
            ps.stderr
        )
        [listed] = [j for j in json.loads(ps.stdout) if j["id"] == job]
        assert listed["state"] == "degraded"
        assert listed["why"].startswith("node 1 on box-b unreachable (cannot reach root@127.0.0.1:"), listed[
            "why"
        ]
        assert [(n["node"], n["host"], n["state"]) for n in listed["nodes"]] == [
            ("0", "box-a", "running"),
            ("1", "box-b", "unreachable"),
        ]
        grow = gpudeck("scale", job, "+1", cwd=tmp_path)
        assert grow.returncode == 1 and "drop the missing node first" in grow.stderr, grow.stderr

        r = gpudeck("scale", job, "-1", cwd=tmp_path, timeout=180)
        assert r.returncode == 0, r.stderr
        new = r.stdout.strip()
        assert "2 → 1 nodes" in r.stderr and "dropped node 1 on box-b unreachable" in r.stderr, r.stderr
        saved = [p for p in points(job, tmp_path) if p.get("event") == "checkpoint_saved"]
        assert saved, "node 0 checkpointed on the stop"
        obj = json.loads(ok("inspect", "--json", new, cwd=tmp_path))
        assert obj["state"] in ("starting", "running") and obj["resized_from"] == {"job": job, "nodes": 2}
        assert [(n["node"], n["host"]) for n in obj["nodes"]] == [("0", "box-a")]
        resumed = wait_for(
            lambda: [p for p in points(new, tmp_path) if p.get("event") == "resumed"],
            timeout=150,
            interval=0.5,
            what="the resumed event",
        )
        assert resumed[0]["world_size"] == 1 and resumed[0]["step"] == saved[-1]["step"], resumed
        last = saved[-1]["step"]
        wait_for(
            lambda: any(
                (p.get("step") or 0) > last and p.get("world_size", 1) == 1 for p in points(new, tmp_path)
            ),
            timeout=120,
            interval=0.5,
            what="a step after the resume",
        )
        text = wait_for(
            lambda: (t := ok("metrics", new, cwd=tmp_path)) and "-- resized" in t and t,
            timeout=60,
            interval=0.5,
            what="the resized record",
        )
        assert (
            "resized 2 → 1 nodes (world size 1) at step" in text
            and "(scale -1, dropped node 1 on box-b unreachable (" in text
        )
    finally:
        kill_boxes_jobs(ssh_home)
