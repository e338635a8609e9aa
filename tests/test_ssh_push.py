"""Over SSH the agent's bytes are consumed on paramiko's transport thread as each packet arrives
(PushPipe): no reader thread, no handoff per line. What the reader thread also did must still hold:
window adjusts (a stream longer than the channel's window), the silence limit (but a blocked
consumer is not silence), and a clear end when the consumer fails."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import paramiko
import pytest

from tests.support.jobs import launch
from tests.support.sshd import SshHome
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, ConnectionLost
from tui.remote.reconnect import ReconnectingClient
from tui.session import transport_for

pytestmark = pytest.mark.slow  # a real sshd and an agent deploy each: about a second or more

PRINTS = "import sys\nfor i in range({n}): print('line', i, 'x' * (i % 50))\nsys.exit(3)"


def _box(ssh_home: SshHome, alive_timeout: float = 5.0) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    ssh_home.ssh_settings(alive_timeout=alive_timeout)


def _follow_all(client: ReconnectingClient, workdir: Path, n: int) -> tuple[list[Any], dict[str, Any]]:
    got: list[Any] = []
    done = threading.Event()

    def sink(job: str, node: str, data: bytes | None, end: dict | None) -> None:
        got.append((threading.current_thread(), data))
        if end is not None:
            got.append(end)
            done.set()

    client.set_output_sink(sink)
    job = launch(client, workdir, [sys.executable, "-c", PRINTS.format(n=n)])
    client.follow(job["id"], "0", offset=0)
    assert done.wait(60), "no end pushed"
    return got, job


def _output_of(ssh_home: SshHome, job_id: str) -> bytes:
    return (ssh_home.agent_dir / "jobs" / job_id / "0" / "output.log").read_bytes()


def test_a_follow_is_written_on_paramikos_transport_thread(ssh_home: SshHome, tmp_path: Path) -> None:
    _box(ssh_home)
    client = ReconnectingClient("box", lambda: transport_for("box"))
    client.connect()
    try:
        got, job = _follow_all(client, tmp_path, 2000)
    finally:
        client.close()
    *chunks, end = got
    assert end["exit_code"] == 3
    assert b"".join(data for _, data in chunks if data is not None) == _output_of(ssh_home, job["id"])
    threads = {thread for thread, _ in chunks}
    assert len(threads) == 1 and isinstance(threads.pop(), paramiko.Transport)  # no reader thread in between


def test_a_stream_longer_than_the_channels_window_keeps_coming(
    ssh_home: SshHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 32 KiB window: the agent stops after 32 KiB unless the watchdog grants more as bytes are consumed.
    opened = paramiko.Transport.open_session

    def small_window(self: paramiko.Transport, *args: Any, **kwargs: Any) -> paramiko.Channel:
        kwargs["window_size"] = 1 << 15
        return opened(self, *args, **kwargs)

    monkeypatch.setattr(paramiko.Transport, "open_session", small_window)
    _box(ssh_home)
    client = ReconnectingClient("box", lambda: transport_for("box"))
    client.connect()
    try:
        got, job = _follow_all(client, tmp_path, 30000)  # ~1.1 MB of output
    finally:
        client.close()
    data = b"".join(d for _, d in got[:-1] if d is not None)
    assert len(data) > 1 << 20 and data == _output_of(ssh_home, job["id"])


def test_a_consumer_blocked_past_the_silence_limit_is_not_silence(ssh_home: SshHome, tmp_path: Path) -> None:
    _box(ssh_home, alive_timeout=1.0)
    release = threading.Event()
    chunks: list[bytes] = []

    def slow_stdout(obj: dict[str, Any]) -> None:  # like `logs -f | less`, paused
        if obj.get("push") == "output":
            release.wait(30)
            chunks.append(obj["data"])

    client = AgentClient(transport_for("box"), on_output=slow_stdout)
    client.connect()
    try:
        job = launch(client, tmp_path, [sys.executable, "-c", PRINTS.format(n=10)])
        client.request("follow", job=job["id"], node="0", offset=0)
        wait_for(lambda: client.transport._chan is not None, what="a channel")  # type: ignore[attr-defined]
        time.sleep(3.0)  # three silence limits while the consumer holds the transport thread
        assert client.connected, client.closed_reason
        release.set()
        assert client.request("ping", timeout=10) is not None  # the same connection answers
        wait_for(lambda: chunks, what="the held chunk delivered")
    finally:
        release.set()
        client.close()


def test_a_frozen_agent_ends_a_pushed_stream_with_the_silence_reason(ssh_home: SshHome) -> None:
    _box(ssh_home, alive_timeout=3.0)  # a loaded machine may take over a second to start the agent
    client = AgentClient(transport_for("box"))
    frozen: list[int] = []
    try:
        client.connect()
        frozen = ssh_home.server.session_tree()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: not client.connected, timeout=30, what="the silence noticed")
        assert client.closed_reason == "no word from the agent for 3 s (host frozen or network down)"
        with pytest.raises(ConnectionLost, match="no word from the agent"):
            client.request("ping", timeout=5)
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        client.close()


def test_a_failing_consumer_ends_the_connection_with_its_reason(ssh_home: SshHome, tmp_path: Path) -> None:
    _box(ssh_home)

    def broken(obj: dict[str, Any]) -> None:
        raise ValueError("boom")

    client = AgentClient(transport_for("box"), on_output=broken)
    try:
        client.connect()
        job = launch(client, tmp_path, [sys.executable, "-c", PRINTS.format(n=10)])
        client.submit("follow", job=job["id"], node="0", offset=0)  # its answer may come after the first push
        wait_for(lambda: not client.connected, timeout=30, what="the connection ended")
        assert client.closed_reason == "reader failed: boom"
        with pytest.raises(ConnectionLost, match="reader failed: boom"):
            client.request("ping", timeout=5)  # fails at once: nothing waits on a dead stream
    finally:
        client.close()


def test_the_connection_prefers_an_aead_cipher(ssh_home: SshHome) -> None:
    # OpenSSH's sshd offers aes128-gcm by default; paramiko's own order would pick aes128-ctr + HMAC.
    _box(ssh_home)
    transport = transport_for("box")
    conn = transport.connect()  # type: ignore[attr-defined]
    try:
        assert conn.transport.remote_cipher == conn.transport.local_cipher == "aes128-gcm@openssh.com"
    finally:
        conn.close()
