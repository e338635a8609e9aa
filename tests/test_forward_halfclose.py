"""`gpudeck forward` passes an EOF on as a half-close, as `ssh -L` does: a client that shuts its write
side (an upload, `nc -N`) still gets the server's answer, and a large answer arrives whole."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome, free_port
from tests.support.waiting import wait_for

# The job's server: reads a request to its EOF, then answers with its length and 8 MiB.
SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4)
while True:
    c, _ = s.accept()
    got = 0
    while True:
        data = c.recv(65536)
        if not data:
            break
        got += len(data)
    c.sendall(b"%d\\n" % got + b"z" * (8 << 20))
    c.close()
"""


def exchange(port: int, request: bytes) -> bytes:
    """Send, half-close, read the answer to its end; b"" while the forward cannot carry it yet."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(request)
            s.shutdown(socket.SHUT_WR)
            chunks = []
            while data := s.recv(1 << 20):
                chunks.append(data)
            return b"".join(chunks)
    except OSError:
        return b""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_half_closed_upload_still_gets_its_answer(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n")
    ssh_home.trust()
    ssh_home.add_host()
    (tmp_path / "server.py").write_text(SERVER)
    remote, local = free_port(), free_port()
    job = gpudeck(
        "run", "--host", "box", "--", sys.executable, str(tmp_path / "server.py"), str(remote), cwd=tmp_path
    ).stdout.strip()
    fwd = subprocess.Popen(
        [sys.executable, "-m", "tui", "forward", job, f"{remote}:{local}"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        request = b"r" * (3 << 20)
        answer = wait_for(lambda: exchange(local, request), timeout=60, what="an answer")
        assert answer == b"%d\n" % len(request) + b"z" * (8 << 20)
    finally:
        fwd.kill()
        fwd.wait()
        kill_all_jobs(ssh_home.agent_dir)
