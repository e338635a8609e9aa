"""Deploying the agent over real SSH: upload once per hash, private modes, old versions collected, and
over an exec channel where the server has no sftp subsystem."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_agent.slurm.record import RECORD_NAME
from remote_agent.slurm.script import SCRIPT_NAME
from tests.support.sshd import Sshd, SshHome, make_sshd
from tests.support.waiting import wait_for
from tui.remote.deploy import ensure_agent, local_zipapp, probe_python
from tui.remote.ssh_connect import connect


def test_first_deploy_uploads_second_does_not(ssh_home: SshHome) -> None:
    ssh_home.trust()
    conn = connect("box")
    try:
        first = ensure_agent(conn, sys.executable, str(ssh_home.agent_dir))
        second = ensure_agent(conn, sys.executable, str(ssh_home.agent_dir))
    finally:
        conn.close()
    assert first.uploaded and not second.uploaded
    assert first.agent == second.agent == str(ssh_home.agent_dir / "agents" / local_zipapp().name)
    assert first.python == sys.executable
    assert Path(first.agent).read_bytes() == local_zipapp().read_bytes()
    assert stat.S_IMODE(Path(first.agent).stat().st_mode) == 0o600
    for d in (ssh_home.agent_dir, ssh_home.agent_dir / "agents"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert not list((ssh_home.agent_dir / "agents").glob(".tmp-*"))  # uploaded under a temp name, renamed


def test_a_new_version_removes_old_ones_no_live_process_uses(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    agents = ssh_home.agent_dir / "agents"
    agents.mkdir(parents=True, mode=0o700)
    (agents / "0000000000000000.pyz").write_bytes(b"old, unused")
    in_use = agents / "1111111111111111.pyz"
    in_use.write_bytes(b"old, but a serve still runs it")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(in_use)])
    try:
        conn = connect("box")
        try:
            deployed = ensure_agent(conn, None, str(ssh_home.agent_dir))
        finally:
            conn.close()
        assert deployed.uploaded and deployed.removed == ("0000000000000000.pyz",)
        assert sorted(p.name for p in agents.iterdir()) == sorted([in_use.name, Path(deployed.agent).name])
    finally:
        holder.kill()
        holder.wait()


def slurm_job(root: Path, job_id: str, agent: Path, ended: bool) -> None:
    """A Slurm job's node dirs as the login node's agent writes them: node 0's sbatch script starts
    `agent` on every compute node; each node's slurm.json holds Slurm's end once it is known."""
    for node in ("0", "1"):
        node_dir = root / "jobs" / job_id / node
        node_dir.mkdir(parents=True)
        record = {"job_id": "7", "script": str(root / "jobs" / job_id / "0" / SCRIPT_NAME)}
        if ended and node == "0":  # node 1's end is not known yet: the job still runs there
            record["end"] = {"state": "COMPLETED"}
        (node_dir / RECORD_NAME).write_text(json.dumps(record))
    (root / "jobs" / job_id / "0" / SCRIPT_NAME).write_text(
        f"#!/bin/bash\nsrun --nodes=2 {sys.executable} '{agent}' slurm-node '{root / 'jobs' / job_id}' &\n"
    )


def test_a_new_version_keeps_the_one_a_queued_or_running_slurm_job_starts(ssh_home: SshHome) -> None:
    """A Slurm job may wait in the queue for days before its nodes start the agent its script names,
    and a running one's compute nodes read it from the shared file system: no process on the login
    node uses it, yet removing it fails the job (python: can't open file, exit 2)."""
    ssh_home.trust()
    agents = ssh_home.agent_dir / "agents"
    agents.mkdir(parents=True, mode=0o700)
    queued, half_ended, ended = (agents / f"{digit * 16}.pyz" for digit in "234")
    for old in (queued, half_ended, ended):
        old.write_bytes(b"an older agent")
    slurm_job(ssh_home.agent_dir, "20261206-000000-aaaaaa", queued, ended=False)
    slurm_job(ssh_home.agent_dir, "20261206-000000-bbbbbb", half_ended, ended=True)
    for node in ("0", "1"):  # every node's end is known: nothing will start its agent again
        slurm_job(ssh_home.agent_dir, f"20261206-000000-cccccc{node}", ended, ended=True)
        record = ssh_home.agent_dir / "jobs" / f"20261206-000000-cccccc{node}" / "1" / RECORD_NAME
        record.write_text(json.dumps(dict(json.loads(record.read_text()), end={"state": "FAILED"})))
    conn = connect("box")
    try:
        deployed = ensure_agent(conn, None, str(ssh_home.agent_dir))
    finally:
        conn.close()
    assert deployed.uploaded and deployed.removed == (ended.name,)
    assert sorted(p.name for p in agents.iterdir()) == sorted(
        [queued.name, half_ended.name, Path(deployed.agent).name]
    )


def test_probe_resolves_python3_to_an_absolute_path(ssh_home: SshHome) -> None:
    ssh_home.trust()
    conn = connect("box")
    try:
        found = probe_python(conn, None)
    finally:
        conn.close()
    assert found.startswith("/") and Path(found).name.startswith("python3")


@pytest.mark.slow
@pytest.mark.skipif(
    not Path("/root/.pyenv/versions/3.8.18/bin/python3.8").exists(), reason="no Python 3.8 here"
)
def test_the_agent_serves_on_python_3_8(ssh_home: SshHome, tmp_path: Path) -> None:
    from tests.conftest import gpudeck

    ssh_home.trust()
    ssh_home.add_host(python="/root/.pyenv/versions/3.8.18/bin/python3.8")
    job_id = gpudeck("run", "--host", "box", "--", "echo", "hi from 3.8", cwd=tmp_path).stdout.strip()
    assert gpudeck("logs", "-f", job_id, cwd=tmp_path).stdout.splitlines()[-1] == "hi from 3.8"
    wait_for(
        lambda: "3.8.18" in gpudeck("hosts", "--json", cwd=tmp_path).stdout,
        timeout=30,
        what="python 3.8 in hello",
    )


@pytest.fixture
def no_sftp(ssh_home: SshHome, tmp_path: Path) -> Iterator[Sshd]:
    """A server without the sftp subsystem (a replaced `Subsystem` line), whose login shell reads a
    line of stdin, as some startup files do; `box` points at it."""
    server = make_sshd(tmp_path / "no-sftp", extra=["Subsystem gpudeck-none /bin/false"])
    (server.root / "authorized_keys").write_text(ssh_home.server.client_key.with_suffix(".pub").read_text())
    with open(server.remote_home / ".bashrc", "a") as f:
        f.write("read -r answer\n")
    ssh_home.trust(server)
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {server.port}\n  User root\n")
    yield server
    server.stop()


@pytest.mark.slow
def test_without_sftp_the_agent_is_uploaded_over_an_exec_channel(ssh_home: SshHome, no_sftp: Sshd) -> None:
    assert (
        subprocess.run(
            [
                "sftp",
                "-b",
                "/dev/null",
                "-P",
                str(no_sftp.port),
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-i",
                str(ssh_home.ssh_dir / "id_ed25519"),
                "root@127.0.0.1",
            ],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
        ).returncode
        != 0
    )  # the case is real
    agent_dir = ssh_home.agent_dir / "deeper"  # missing parents are made private too
    conn = connect("box")
    try:
        first = ensure_agent(conn, sys.executable, str(agent_dir))
        second = ensure_agent(conn, sys.executable, str(agent_dir))
    finally:
        conn.close()
    assert first.uploaded and not second.uploaded and first.agent == second.agent
    assert Path(first.agent).read_bytes() == local_zipapp().read_bytes()
    assert stat.S_IMODE(Path(first.agent).stat().st_mode) == 0o600
    for d in (ssh_home.agent_dir, agent_dir, agent_dir / "agents"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert not list((agent_dir / "agents").glob(".tmp-*"))


@pytest.mark.slow
def test_a_host_without_sftp_runs_jobs(ssh_home: SshHome, no_sftp: Sshd, tmp_path: Path) -> None:
    from tests.conftest import gpudeck

    ssh_home.add_host()
    job_id = gpudeck("run", "--host", "box", "--", "echo", "no sftp needed", cwd=tmp_path).stdout.strip()
    assert gpudeck("logs", "-f", job_id, cwd=tmp_path).stdout.splitlines()[-1] == "no sftp needed"


def test_the_connection_sends_small_frames_at_once(ssh_home: SshHome) -> None:
    """TCP_NODELAY, as ssh sets it for an interactive session: a warm connection's frames are small,
    and Nagle held one written behind an unacknowledged one for the peer's delayed ACK."""
    ssh_home.trust()
    conn = connect("box")
    try:
        sock = conn.transport.sock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        conn.close()
