"""`serve --heartbeat S`: pushes a heartbeat every S seconds and exits when its client goes silent."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest


def _serve(agent_dir: Path, heartbeat: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "remote_agent",
            "serve",
            "--agent-dir",
            str(agent_dir),
            "--heartbeat",
            str(heartbeat),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


@pytest.mark.slow
def test_heartbeats_are_pushed_and_pings_keep_serve_alive(tmp_path: Path) -> None:
    proc = _serve(tmp_path / "agent", 0.2)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert json.loads(proc.stdout.readline())["gpudeck"] == "agent"
        beats = 0
        while beats < 8:  # 1.6 s: twice the 4-beat silence limit, kept alive by our pings
            proc.stdin.write(b'{"id": "ping", "op": "ping"}\n')
            proc.stdin.flush()
            obj = json.loads(proc.stdout.readline())
            if obj.get("push") == "heartbeat":
                beats += 1
                assert isinstance(obj["t"], float)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_serve_exits_when_the_client_goes_silent(tmp_path: Path) -> None:
    proc = _serve(tmp_path / "agent", 0.2)
    try:
        assert proc.wait(timeout=30) == 0  # stdin still open: only the silence tells
    finally:
        proc.kill()
        proc.wait()


def _returns(fn: Callable[[], object]) -> bool:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    thread.join(60)
    return not thread.is_alive()


def test_the_watcher_wakes_on_a_write_long_before_its_timeout(tmp_path: Path) -> None:
    from remote_agent.storage.watch import Watcher, file_watcher

    path = tmp_path / "journal"
    path.write_bytes(b"")
    watcher = file_watcher(str(path))
    assert watcher is not None and watcher.native  # Linux: inotify through ctypes
    try:
        with open(path, "ab") as f:
            f.write(b"x\n")
        # An hour's timeout: returning at all means it woke.
        assert _returns(lambda: watcher.wait(3600.0)), "the write did not wake the watcher"
        waker = Watcher()
        waker.wake()
        assert _returns(lambda: waker.wait(3600.0)), "wake() did not wake the watcher"
        waker.close()
        waker.wake()  # after close: a no-op, never a write to a reused descriptor
    finally:
        watcher.close()


# -- ~/.ssh/config's ServerAliveInterval × ServerAliveCountMax as a host's silence limit --

ALIVE_CONFIG = """\
Host fast
  ServerAliveInterval 1
  ServerAliveCountMax 2
Host lone
  ServerAliveInterval 5
Host off
  ServerAliveInterval 0
Host countonly
  ServerAliveCountMax 7
Host zero
  ServerAliveInterval 4
  ServerAliveCountMax 0
Host *
  ServerAliveCountMax 5
"""


def test_the_silence_limit_per_host_follows_server_alive_options() -> None:

    from tui.remote.ssh_config import SshConfig, resolve

    config = SshConfig.from_text(ALIVE_CONFIG)
    limits = {
        h: resolve(h, config=config).silence_limit(10.0)
        for h in ("fast", "lone", "off", "countonly", "zero", "plain")
    }
    # fast: 1 s × 2; lone: 5 s × the `Host *` count 5; off/countonly/plain: no interval → [ssh] alive_timeout;
    # zero: a count of 0 still allows one interval.
    assert limits == {"fast": 2.0, "lone": 25.0, "off": 10.0, "countonly": 10.0, "zero": 4.0, "plain": 10.0}
    assert (
        resolve("x", config=SshConfig.from_text("Host x\n  ServerAliveInterval 15\n")).silence_limit(10.0)
        == 45.0
    )


@pytest.mark.slow
def test_a_frozen_peer_is_noticed_within_the_hosts_server_alive_limit(ssh_home) -> None:  # type: ignore[no-untyped-def]
    import os
    import signal

    from tui.hosts_file import HostEntry
    from tui.remote.ssh_transport import SshTransport
    from tui.remote.transport import TransportError
    from tui.settings import load as load_settings

    ssh_home.trust()
    ssh_home.ssh_settings(alive_timeout=60.0)  # the default would take a minute; the host's config says 2 s
    port = ssh_home.server.port
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {port}\n  User root\n"
        "  ServerAliveInterval 1\n  ServerAliveCountMax 2\n"
    )
    transport = SshTransport(
        HostEntry(name="box", target="box", agent_dir=str(ssh_home.agent_dir)), load_settings().ssh
    )
    assert transport.alive_timeout == 60.0
    frozen: list[int] = []
    try:
        transport.open()
        assert (transport.alive_timeout, transport.heartbeat) == (2.0, 0.5)
        assert (
            transport.conn is not None
            and transport.conn.transport.packetizer._Packetizer__keepalive_interval == 1
        )  # type: ignore[attr-defined]
        beats = 0
        while beats < 2:  # serve is up and pushing every 0.5 s
            beats += b'"heartbeat"' in transport.readline()
        frozen = ssh_home.server.session_tree()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        start = time.monotonic()
        try:
            while True:
                transport.readline()
        except TransportError as exc:
            assert "no word from the agent for 2 s" in str(exc)
        elapsed = time.monotonic() - start
        assert elapsed > 1.4, (
            elapsed
        )  # 2 s of silence (less what was already in flight); the message says not 60
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        transport.close()
