"""Issue 35, ports: `gpudeck forward JOB PORT:LOCAL` reaches an HTTP server the job started on its
node (the sshd fixture host), survives a cut of the SSH connection, and ends cleanly on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.cleanup import kill_all_jobs
from tests.support.signals import sigint_default
from tests.support.sshd import SshHome, free_port
from tests.support.waiting import wait_for


def get(url: str) -> str:
    """The page, or "" while it cannot be had yet (the job's server starting, the SSH link coming back)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()
    except OSError:
        return ""


def test_ports_are_checked(gpudeck_home: Path) -> None:
    from tui.commands.forward import ports
    from tui.errors import GpudeckError

    assert ports("6006") == (6006, 6006) and ports("8888:0") == (8888, 0)
    for bad in ("0", "70000", "x:1", "1:2:3"):
        with pytest.raises(GpudeckError, match="expected PORT or PORT:LOCAL"):
            ports(bad)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_forward_reaches_a_server_the_job_started_and_survives_a_cut(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n")
    ssh_home.trust()
    ssh_home.add_host()
    served = tmp_path / "site"
    served.mkdir()
    (served / "hello.txt").write_text("from the node")
    remote, local = free_port(), free_port()
    server = f"exec {sys.executable} -m http.server {remote} --bind 127.0.0.1 --directory {served}"
    job = gpudeck("run", "--host", "box", "--", "sh", "-c", server, cwd=tmp_path).stdout.strip()
    fwd = subprocess.Popen(
        [sys.executable, "-m", "tui", "forward", job, f"{remote}:{local}"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,  # Ctrl-C as from a terminal, however pytest was started
    )
    try:
        assert fwd.stdout is not None
        line = fwd.stdout.readline()
        assert line.startswith(f"http://127.0.0.1:{local} → box:{remote}"), (line, fwd.stderr)
        wait_for(lambda: get(f"http://127.0.0.1:{local}/hello.txt") == "from the node", what="the page")
        assert ssh_home.server.cut() >= 1  # the SSH connection dies under it
        wait_for(
            lambda: get(f"http://127.0.0.1:{local}/hello.txt") == "from the node", what="again after the cut"
        )
        fwd.send_signal(signal.SIGINT)
        assert (
            fwd.wait(timeout=20) == 0
        )  # a reconnect in flight no longer holds Ctrl-C up (test_forward_close.py)
    finally:
        if fwd.poll() is None:
            fwd.kill()
        kill_all_jobs(ssh_home.agent_dir)
