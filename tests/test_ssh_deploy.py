"""Deploying the agent over real SSH: upload once per hash, private modes, old versions collected."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sshd import SshHome
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


def test_probe_resolves_python3_to_an_absolute_path(ssh_home: SshHome) -> None:
    ssh_home.trust()
    conn = connect("box")
    try:
        found = probe_python(conn, None)
    finally:
        conn.close()
    assert found.startswith("/") and Path(found).name.startswith("python3")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/root/.pyenv/versions/3.8.18/bin/python3.8").exists(), reason="no Python 3.8 here")
def test_the_agent_serves_on_python_3_8(ssh_home: SshHome, tmp_path: Path) -> None:
    from tests.conftest import gpudeck

    ssh_home.trust()
    ssh_home.add_host(python="/root/.pyenv/versions/3.8.18/bin/python3.8")
    job_id = gpudeck("run", "--host", "box", "--", "echo", "hi from 3.8", cwd=tmp_path).stdout.strip()
    assert gpudeck("logs", "-f", job_id, cwd=tmp_path).stdout.splitlines()[-1] == "hi from 3.8"
    wait_for(lambda: "3.8.18" in gpudeck("hosts", "--json", cwd=tmp_path).stdout, timeout=30, what="python 3.8 in hello")
