"""Issue 35, ports: `gpudeck forward`'s Ctrl-C ends it at once with downloads in flight (pump threads
blocked on clients that stopped reading), after cuts, and while it connects again to a host that
does not answer (its listener stopped: the handshake would wait out the whole connect timeout)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.cleanup import kill_all_jobs
from tests.support.signals import sigint_default
from tests.support.sshd import SshHome, free_port
from tests.support.waiting import wait_for

# faulthandler on SIGUSR1: a forward that does not end says where each thread waits
CLI = "import faulthandler, signal; faulthandler.register(signal.SIGUSR1, all_threads=True); from tui.cli import main; main()"


def _backlog(port: int) -> int:
    """Connections waiting in the listener's accept queue (its Recv-Q): handshakes in flight."""
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout.split()
    return int(out[1]) if len(out) > 1 else 0


def _quietly(probe: Callable[[], bool]) -> bool:
    try:
        return probe()
    except AssertionError:
        return False


def _download_stalled(local: int) -> socket.socket:
    """A GET of the big file whose answer is read a little and then left: the forward's buffers fill."""
    s = socket.create_connection(("127.0.0.1", local), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /big HTTP/1.0\r\nHost: x\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.0 200")
    return s


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_ctrl_c_ends_forward_mid_transfer_and_after_a_cut(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n")
    ssh_home.trust()
    ssh_home.add_host()
    # A long connect timeout: a Ctrl-C that waited for the handshake would wait a minute. The
    # session's own client reconnects late, so the only handshake in the queue is the forward's.
    (ssh_home.gpudeck_home / "config.toml").write_text(
        "[ssh]\nconnect_timeout = 90\nbackoff_initial = 120\nbackoff_max = 120\n"
    )
    served = tmp_path / "site"
    served.mkdir()
    (served / "big").write_bytes(os.urandom(1 << 20) * 64)
    remote, local = free_port(), free_port()
    server = f"exec {sys.executable} -m http.server {remote} --bind 127.0.0.1 --directory {served}"
    job = gpudeck("run", "--host", "box", "--", "sh", "-c", server, cwd=tmp_path).stdout.strip()
    clients: list[socket.socket] = []
    listener = ssh_home.server.proc.pid if ssh_home.server.proc is not None else None
    fwd = subprocess.Popen(
        [sys.executable, "-c", CLI, "forward", job, f"{remote}:{local}"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,  # Ctrl-C as from a terminal, however pytest was started
    )
    try:
        assert fwd.stdout is not None and fwd.stdout.readline().startswith(f"http://127.0.0.1:{local}")

        def started() -> bool:
            try:
                clients.append(_download_stalled(local))
            except (OSError, AssertionError):
                return False
            return True

        wait_for(started, timeout=60, what="a download through the forward")
        assert ssh_home.server.cut() >= 1  # the SSH connection dies under the first download
        wait_for(started, timeout=60, what="a download after the cut")  # and a second one stalls
        assert listener is not None
        os.kill(listener, signal.SIGSTOP)  # the host answers no more: a new handshake hangs
        assert ssh_home.server.cut() >= 1

        def reconnecting() -> bool:
            # a connection that came before the forward saw the cut fails at once: try another
            clients.append(socket.create_connection(("127.0.0.1", local), timeout=30))
            return wait_for(lambda: _backlog(ssh_home.server.port) >= 1, timeout=1, what="")  # raises

        wait_for(
            lambda: _quietly(reconnecting), timeout=60, interval=0.2, what="the forward connecting again"
        )
        fwd.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        try:
            code = fwd.wait(timeout=20)
        except subprocess.TimeoutExpired:
            fwd.send_signal(signal.SIGUSR1)
            time.sleep(1)
            fwd.kill()
            raise AssertionError(
                f"forward still running 20 s after SIGINT:\n{fwd.communicate()[1]}"
            ) from None
        print(f"exit after SIGINT: {time.monotonic() - t0:.2f} s")
        assert code == 0, fwd.communicate()[1]
    finally:
        if listener is not None:
            os.kill(listener, signal.SIGCONT)
        for c in clients:
            c.close()
        if fwd.poll() is None:
            fwd.kill()
        kill_all_jobs(ssh_home.agent_dir)
