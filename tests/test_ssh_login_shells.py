"""The agent starts under any login shell, whatever its startup file prints or reads.

sshd runs every command through the user's passwd shell, so each case gets its own real sshd whose
/etc/passwd (in a private mount namespace) names that shell. Each shell's startup file prints
chatter without a trailing newline and reads a line of stdin: the probe must close its stdin and
find its marker mid-line, and the agent's hello must be found after any amount of chatter.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sshd import Sshd, can_fake_login_shell, host_key_line, make_sshd
from tui.hosts_file import HostEntry
from tui.remote.client import AgentClient
from tui.remote.ssh_transport import SshTransport
from tui.remote.warm import disconnect
from tui.remote.warm_channel import WarmTransport
from tui.settings import SshSettings

# shell name → (path, startup file under HOME that a non-interactive `shell -c` reads, its text)
SHELLS = {
    "bash": ("/bin/bash", ".bashrc", "seq 1 1500\nprintf 'motd without a newline'\nread -r answer\n"),
    "sh": ("/bin/dash", None, None),  # dash -c reads no startup file
    "zsh": ("/usr/bin/zsh", ".zshenv", "printf 'zsh motd without a newline'\nread -r answer\n"),
    "fish": (
        "/usr/bin/fish",
        ".config/fish/config.fish",
        "printf 'fish motd without a newline'\nread answer\n",
    ),
    "tcsh": ("/usr/bin/tcsh", ".tcshrc", "printf 'tcsh motd without a newline'\nset answer = $<\n"),
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="openssh-server is not installed"),
    pytest.mark.skipif(
        not can_fake_login_shell(), reason="needs root and unshare -m for a private /etc/passwd"
    ),
]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Sshd]]:
    started: dict[str, Sshd] = {}
    for name, (shell, rc, text) in SHELLS.items():
        if not os.access(shell, os.X_OK):
            continue  # CI installs zsh, fish and tcsh; a machine without one skips that case
        server = make_sshd(tmp_path_factory.mktemp(f"sshd-{name}"), login_shell=shell)
        (server.remote_home / ".bashrc").unlink()
        (server.remote_home / ".profile").unlink()
        if rc is not None and text is not None:
            (server.remote_home / rc).parent.mkdir(parents=True, exist_ok=True)
            (server.remote_home / rc).write_text(text)
        started[name] = server
    yield started
    for server in started.values():
        server.stop()


@pytest.mark.parametrize("shell", list(SHELLS))
def test_the_agent_starts_under_this_login_shell(
    shell: str, servers: dict[str, Sshd], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shell not in servers:
        pytest.skip(f"{SHELLS[shell][0]} is not installed")
    server = servers[shell]
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(server.client_key, home / ".ssh" / "id_ed25519")
    os.chmod(home / ".ssh" / "id_ed25519", 0o600)
    (home / ".ssh" / "config").write_text(
        f"Host box\n  HostName 127.0.0.1\n  Port {server.port}\n  User root\n"
    )
    gpudeck_home = tmp_path / "gpudeck"
    gpudeck_home.mkdir()
    (gpudeck_home / "known_hosts").write_text(host_key_line(server))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPUDECK_SSH_HOME", str(home))  # ssh reads the passwd home: ours
    monkeypatch.setenv("GPUDECK_HOME", str(gpudeck_home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.setattr("tui.remote.deploy.PROBE_TIMEOUT", 10.0)  # a probe waiting on stdin fails, not hangs

    agent_dir = tmp_path / "remote-agent"
    entry = HostEntry(name="box", target="box", python=sys.executable, agent_dir=str(agent_dir))
    transport = SshTransport(entry, SshSettings(alive_timeout=2.0))
    client = AgentClient(transport)
    try:
        marker = client.connect(timeout=20)
        hello = client.request("hello", timeout=10)
        # a session of the warm master's one serve, not the direct connection a failed join falls
        # back to: the startup file's `read` took the keepalive the master sends first, not a frame
        assert transport.conn is not None and isinstance(transport.conn.transport, WarmTransport)
    finally:
        client.close()
        disconnect(entry)  # the master ends with the test, not 10 min later
    assert marker["gpudeck"] == "agent"
    assert hello["agent_dir"] == str(agent_dir) and hello["python"]
