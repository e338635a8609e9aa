"""Code sync over a real sshd (the agent receives over the host's own connection): the job runs in
the exact tree (exec bits, links, non-UTF-8 names), a second job of one tree sends nothing, an edit
sends one file, a restart runs the code the job started with, and a 2-node job scaled onto a second
host runs the same snapshot there."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.boxes import agent_dir, kill_boxes_jobs, two_boxes
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for

BAD_NAME = b"donn\xe9es.txt"  # latin-1: not UTF-8


def _source(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "what.txt").write_text("version one\n")
    (root / "run.sh").write_text('#!/bin/sh\necho "run.sh says $(cat pkg/what.txt)"\n')
    (root / "run.sh").chmod(0o755)
    (root / ".gitignore").write_text("*.log\n!keep.log\n")
    (root / "noise.log").write_text("left out\n")
    (root / "keep.log").write_text("kept\n")
    os.symlink("pkg/what.txt", root / "what-link.txt")
    with open(os.path.join(os.fsencode(root), BAD_NAME), "wb") as f:
        f.write(b"latin-1 name\n")
    return root


def _state(job: str, cwd: Path) -> str:
    return str(json.loads(ok("inspect", "--json", job, cwd=cwd))["state"])


def _ended(job: str, cwd: Path) -> dict:
    wait_for(lambda: _state(job, cwd) in ("exited", "failed"), timeout=60, interval=0.2, what=f"{job} ends")
    return json.loads(ok("inspect", "--json", job, cwd=cwd))


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_synced_job_runs_the_exact_tree_and_restarts_on_its_own_snapshot(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    src = _source(tmp_path / "src")
    first = json.loads(ok("sync", str(src), "--host", "box", "--json", cwd=tmp_path, timeout=120))
    assert first["files"] == 7 and first["sent_files"] == 6 and not first["already"]  # 6 files, 1 link
    again = json.loads(ok("sync", str(src), "--host", "box", "--json", cwd=tmp_path))
    assert again["already"] and again["sent_files"] == 0 and again["snapshot"] == first["snapshot"]

    script = "./run.sh; cat what-link.txt; ls -b; test -e noise.log && echo LEAKED; true"
    job = ok(
        "run",
        "--host",
        "box",
        "--sync",
        str(src),
        "--name",
        "synced",
        "--",
        "bash",
        "-c",
        script,
        cwd=tmp_path,
    ).strip()
    obj = _ended(job, tmp_path)
    assert obj["state"] == "exited" and obj["code"]["snapshot"] == first["snapshot"]
    out = ok("logs", job, cwd=tmp_path)
    assert "run.sh says version one" in out and "keep.log" in out and "LEAKED" not in out
    assert "donn\\351es.txt" in out  # ls -b: the byte 0xe9 as an octal escape
    assert f"[gpudeck] code {first['snapshot'][:12]}: 7 files" in out
    work = os.fsencode(ssh_home.agent_dir / "work" / job)
    assert os.path.exists(os.path.join(work, BAD_NAME))  # the name's very bytes

    (src / "pkg" / "what.txt").write_text("version two\n")  # a local edit after the launch
    edited = json.loads(ok("sync", str(src), "--host", "box", "--json", cwd=tmp_path))
    assert edited["sent_files"] == 1 and edited["snapshot"] != first["snapshot"]  # one new blob

    again_job = ok("restart", job, cwd=tmp_path, timeout=120).strip().splitlines()[-1]
    assert _ended(again_job, tmp_path)["code"]["snapshot"] == first["snapshot"]
    assert "run.sh says version one" in ok("logs", again_job, cwd=tmp_path)  # not the edit

    second = ok("run", "--host", "box", "--sync", str(src), "--", "cat", "pkg/what.txt", cwd=tmp_path)
    job2 = second.strip()
    _ended(job2, tmp_path)
    assert "version two" in ok("logs", job2, cwd=tmp_path)


def _node_output(ssh_home: SshHome, box: str, job: str, node: str) -> str:
    path = agent_dir(ssh_home, box) / "jobs" / job / node / "output.log"
    return path.read_text(errors="replace") if path.exists() else ""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_two_node_job_scaled_onto_another_host_runs_the_same_snapshot(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    two_boxes(ssh_home)
    src = _source(tmp_path / "src")
    script = 'echo "node $GPUDECK_NODE_RANK: $(cat pkg/what.txt)"; exec sleep 300'
    try:
        job = ok(
            "run", "--host", "box-a,box-a", "--nodes", "2", "--launcher", "none",
            "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
            "--sync", str(src), "--grace", "5",
            "--", "bash", "-c", script, "job", "--checkpoint-dir", "ck",
            cwd=tmp_path, timeout=180,
        ).strip()  # fmt: skip
        for node in ("0", "1"):  # both nodes on one host: one work dir, made once under its lock
            wait_for(
                lambda n=node: f"node {n}: version one" in _node_output(ssh_home, "box-a", job, n),
                timeout=60,
                interval=0.2,
                what=f"node {node}'s line",
            )
        snapshot = json.loads(ok("inspect", "--json", job, cwd=tmp_path))["code"]["snapshot"]
        assert not (agent_dir(ssh_home, "box-b") / "code" / "snapshots").exists()

        new = ok("scale", job, "+1", "--host", "box-b", cwd=tmp_path, timeout=240).strip()
        obj = json.loads(ok("inspect", "--json", new, cwd=tmp_path))
        assert sorted((n["node"], n["host"]) for n in obj["nodes"]) == [
            ("0", "box-a"),
            ("1", "box-a"),
            ("2", "box-b"),
        ]
        assert obj["code"]["snapshot"] == snapshot and obj["code"]["home"] == job
        wait_for(
            lambda: "node 2: version one" in _node_output(ssh_home, "box-b", new, "2"),
            timeout=60,
            interval=0.2,
            what="the new host's node line",
        )
        assert (agent_dir(ssh_home, "box-b") / "code" / "snapshots" / f"{snapshot}.json").exists()
    finally:
        kill_boxes_jobs(ssh_home)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_scale_after_a_local_edit_relays_the_jobs_snapshot_from_its_host(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    two_boxes(ssh_home)
    src = _source(tmp_path / "src")
    script = 'echo "node $GPUDECK_NODE_RANK: $(cat pkg/what.txt)"; exec sleep 300'
    try:
        job = ok(
            "run", "--host", "box-a,box-a", "--nodes", "2", "--launcher", "none",
            "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
            "--sync", str(src), "--grace", "5",
            "--", "bash", "-c", script, "job", "--checkpoint-dir", "ck",
            cwd=tmp_path, timeout=180,
        ).strip()  # fmt: skip
        wait_for(
            lambda: "node 0: version one" in _node_output(ssh_home, "box-a", job, "0"),
            timeout=60,
            interval=0.2,
            what="node 0's line",
        )
        (src / "pkg" / "what.txt").write_text("version two\n")  # edited here after the launch
        (src / "run.sh").unlink()
        new = ok("scale", job, "+1", "--host", "box-b", cwd=tmp_path, timeout=240).strip()
        wait_for(
            lambda: "node 2: version one" in _node_output(ssh_home, "box-b", new, "2"),
            timeout=60,
            interval=0.2,
            what="the new host's node line",
        )
        snapshot = json.loads(ok("inspect", "--json", new, cwd=tmp_path))["code"]["snapshot"]
        assert (agent_dir(ssh_home, "box-b") / "code" / "snapshots" / f"{snapshot}.json").exists()
        work = agent_dir(ssh_home, "box-b") / "work" / job
        assert os.access(work / "run.sh", os.X_OK)  # the original tree, exec bit and all
    finally:
        kill_boxes_jobs(ssh_home)
