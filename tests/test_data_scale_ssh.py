"""`--data` through a resize over the real sshd: a 2-node job on box-a scaled `+1` onto box-b, which the
job was not on, and whose cache is empty (the job is synced, so PATH is in each host's own work dir): the new node fetches the job's objects (presigned again by
the client, from the launch's listing) into box-b's own cache before its command starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.boxes import agent_dir, kill_boxes_jobs, two_boxes
from tests.support.s3 import S3, moto_s3_server_fixture, s3_fixture  # noqa: F401 - fixtures
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for

OBJECTS = {"ds/a.txt": b"alpha\n", "ds/sub/b.txt": b"beta\n"}


def _node_output(ssh_home: SshHome, box: str, job: str, node: str) -> str:
    path = agent_dir(ssh_home, box) / "jobs" / job / node / "output.log"
    return path.read_text(errors="replace") if path.exists() else ""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_node_scaled_onto_a_new_host_fetches_the_jobs_data_there(
    ssh_home: SshHome, tmp_path: Path, s3: S3
) -> None:
    two_boxes(ssh_home)
    s3.bucket("bkt", OBJECTS)
    src = tmp_path / "src"  # synced: each host's work dir is its own (both boxes share one HOME here)
    src.mkdir()
    (src / "train.sh").write_text("exec sleep 300\n")
    script = 'echo "node $GPUDECK_NODE_RANK: $(cat data/sub/b.txt)"; exec sleep 300'
    try:
        job = ok(
            "run", "--host", "box-a,box-a", "--nodes", "2", "--launcher", "none",
            "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
            "--sync", str(src), "--data", "s3://bkt/ds:data", "--grace", "5",
            "--", "bash", "-c", script, "job", "--checkpoint-dir", "ck",
            cwd=tmp_path, timeout=180,
        ).strip()  # fmt: skip
        for node in ("0", "1"):
            wait_for(
                lambda n=node: f"node {n}: beta" in _node_output(ssh_home, "box-a", job, n),
                timeout=60,
                interval=0.2,
                what=f"node {node}'s line",
            )
        assert not (agent_dir(ssh_home, "box-b") / "data").exists()
        s3.put("bkt", "ds/late.txt", b"added after the launch\n")  # not the job's data

        new = ok("scale", job, "+1", "--host", "box-b", cwd=tmp_path, timeout=240).strip()
        obj = json.loads(ok("inspect", "--json", new, cwd=tmp_path))
        assert sorted((n["node"], n["host"]) for n in obj["nodes"]) == [
            ("0", "box-a"),
            ("1", "box-a"),
            ("2", "box-b"),
        ]
        wait_for(
            lambda: "node 2: beta" in _node_output(ssh_home, "box-b", new, "2"),
            timeout=60,
            interval=0.2,
            what="the new host's node line",
        )
        out = _node_output(ssh_home, "box-b", new, "2")
        assert "2 objects" in out and "2 fetched" in out, out  # fetched there, the launch's 2 objects
        cached = [p for p in (agent_dir(ssh_home, "box-b") / "data" / "objects").iterdir()]
        assert sorted(p.read_bytes() for p in cached) == sorted(OBJECTS.values())
        assert not list((agent_dir(ssh_home, "box-b") / "jobs" / new).glob("*/data-urls.json"))
    finally:
        kill_boxes_jobs(ssh_home)
