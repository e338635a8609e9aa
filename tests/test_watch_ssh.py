"""`gpudeck watch --host` over a real OpenSSH server on 127.0.0.1: the shipped agent follows a log
file through rotation and truncation; logs, metrics and stop work as they do locally."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remote_agent.storage.records import expand_all
from tests.conftest import gpudeck
from tests.support.sshd import SshHome
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

WRITER = str(Path(__file__).parent / "support" / "rotating_writer.py")


def steps(agent_dir: Path, job_id: str) -> list[int]:
    try:
        lines = (agent_dir / "jobs" / job_id / "0" / "events.jsonl").read_text().splitlines()
    except OSError:
        return []
    records = expand_all(json.loads(line) for line in lines if line.endswith("}"))
    return [r["values"]["step"] for r in records if r["kind"] == "metric"]


def test_a_run_on_an_ssh_host_is_watched_through_rotation(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    log = tmp_path / "remote-run" / "train.log"
    log.parent.mkdir()
    started = gpudeck("watch", "--host", "box", str(log), "--name", "sshwatch", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    job_id = started.stdout.strip()
    copy = ssh_home.agent_dir / "jobs" / job_id / "0" / "output.log"
    writer = subprocess.run(
        [sys.executable, WRITER, str(log), str(copy), "lines:20,rotate,lines:10,copytruncate,lines:5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert writer.returncode == 0, writer.stderr
    wait_for(lambda: len(steps(ssh_home.agent_dir, job_id)) >= 35, what="35 points")
    assert steps(ssh_home.agent_dir, job_id) == list(range(1, 36))

    points = [
        json.loads(x) for x in gpudeck("metrics", "--json", "sshwatch", cwd=tmp_path).stdout.splitlines()
    ]
    assert [p["values"]["step"] for p in points] == list(range(1, 36))
    logs = gpudeck("logs", "sshwatch", cwd=tmp_path).stdout.splitlines()
    assert [line.split()[0] for line in logs] == [f"step={i}" for i in range(1, 36)]
    ps = json.loads(gpudeck("ps", "--json", cwd=tmp_path).stdout)
    assert [(j["id"], j["nodes"][0]["host"], j["watch"]["path"]) for j in ps] == [(job_id, "box", str(log))]
    stopped = gpudeck("stop", "sshwatch", cwd=tmp_path)
    assert stopped.returncode == 0 and "ended the watch" in stopped.stdout, stopped.stderr
