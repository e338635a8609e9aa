"""~/.ssh/config as ssh reads it: Include, HostName/User/Port/IdentityFile/IdentitiesOnly, jumps, proxies."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import Sshd, SshHome, make_sshd
from tui.remote.ssh_config import SshConfigError, resolve, split_target
from tui.remote.ssh_connect import SshError, connect

RELAY = Path(__file__).parent / "support" / "relay.py"


def test_split_target() -> None:
    assert split_target("gpu1") == (None, "gpu1", None)
    assert split_target("ubuntu@10.0.0.5:2222") == ("ubuntu", "10.0.0.5", 2222)
    assert split_target("[::1]:22") == (None, "::1", 22)
    with pytest.raises(SshConfigError):
        split_target("host:notaport")


def test_include_globs_tilde_and_relative_paths(ssh_home: SshHome) -> None:
    (ssh_home.ssh_dir / "conf.d").mkdir()
    (ssh_home.ssh_dir / "conf.d" / "10-gpu.conf").write_text(
        "Host gpu*\n  User trainer\n  Port 2200\n  IdentityFile ~/.ssh/keys/gpu\n  IdentitiesOnly yes\n"
    )
    (ssh_home.ssh_dir / "conf.d" / "20-other.conf").write_text("Host gpu1\n  HostName 10.1.2.3\n")
    (ssh_home.home / "extra.conf").write_text(
        "Host far\n  HostName far.example\n  ProxyJump gpu1,gpu2:2201\n"
    )
    ssh_home.write_ssh_config("Include conf.d/*.conf ~/extra.conf\nHost *\n  ServerAliveInterval 7\n")
    gpu1 = resolve("gpu1")
    assert (gpu1.hostname, gpu1.user, gpu1.port) == ("10.1.2.3", "trainer", 2200)
    assert gpu1.identity_files == [str(ssh_home.ssh_dir / "keys" / "gpu")] and gpu1.identities_only
    assert gpu1.server_alive_interval == 7 and gpu1.known_hosts_name == "[10.1.2.3]:2200"
    assert resolve("root@gpu1:22").user == "root" and resolve("root@gpu1:22").known_hosts_name == "10.1.2.3"
    assert resolve("far").proxy_jump == ["gpu1", "gpu2:2201"]


def test_identities_only_uses_only_the_named_key(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    keys = ssh_home.ssh_dir / "keys"
    keys.mkdir()
    shutil.move(ssh_home.ssh_dir / "id_ed25519", keys / "gpu")
    port = ssh_home.server.port
    ssh_home.write_ssh_config(
        f"Include conf.d/*\nHost box\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentitiesOnly yes\n"
    )
    with pytest.raises(SshError, match="permission denied"):
        connect("box").close()
    (ssh_home.ssh_dir / "conf.d").mkdir()
    (ssh_home.ssh_dir / "conf.d" / "box").write_text("Host box\n  IdentityFile ~/.ssh/keys/gpu\n")
    connect("box").close()


@pytest.fixture
def jump(sshd: Sshd, tmp_path: Path) -> Iterator[Sshd]:
    server = make_sshd(tmp_path / "jump-sshd")
    (server.root / "authorized_keys").write_text((sshd.root / "client_ed25519.pub").read_text())
    yield server
    server.stop()


@pytest.mark.slow
def test_proxyjump_through_a_second_sshd(ssh_home: SshHome, jump: Sshd, tmp_path: Path) -> None:
    ssh_home.write_ssh_config(
        f"Host bastion\n  HostName 127.0.0.1\n  Port {jump.port}\n  User root\n"
        f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n  ProxyJump bastion\n"
    )
    ssh_home.add_host()
    trusted = gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr
    assert (
        f"[127.0.0.1]:{jump.port}" in trusted.stdout
        and f"[127.0.0.1]:{ssh_home.server.port}" in trusted.stdout
    )
    conn = connect("box")
    try:
        assert jump.connection_pids()  # the bastion carries the connection
    finally:
        conn.close()
    job_id = gpudeck("run", "--host", "box", "--", "echo", "via the bastion", cwd=tmp_path).stdout.strip()
    assert gpudeck("logs", "-f", job_id, cwd=tmp_path).stdout.splitlines()[-1] == "via the bastion"


@pytest.mark.slow
def test_proxycommand(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    marker = tmp_path / "relay-ran"
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n"
        f"  ProxyCommand {sys.executable} {RELAY} %h %p {marker}\n"
    )
    ssh_home.add_host()
    job_id = gpudeck("run", "--host", "box", "--", "echo", "via a proxy command", cwd=tmp_path).stdout.strip()
    assert gpudeck("logs", "-f", job_id, cwd=tmp_path).stdout.splitlines()[-1] == "via a proxy command"
    assert f"127.0.0.1:{ssh_home.server.port}" in marker.read_text()


def test_proxycommand_runs_through_the_shell_as_ssh_runs_it(
    ssh_home: SshHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ssh runs `$SHELL -c "exec COMMAND"`: redirections, variables and quotes are the shell's.
    ssh_home.trust()
    marker = tmp_path / "relay ran"
    monkeypatch.setenv("SHELL", "/bin/sh")
    monkeypatch.setenv("GPUDECK_TEST_RELAY", str(RELAY))
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n"
        f"  ProxyCommand {sys.executable} \"$GPUDECK_TEST_RELAY\" %h %p '{marker}' 2>/dev/null\n"
    )
    conn = connect("box", timeout=10)
    try:
        assert conn.transport.is_authenticated()
    finally:
        conn.close()
    assert f"127.0.0.1:{ssh_home.server.port}" in marker.read_text()


@pytest.mark.slow
def test_an_encrypted_key_needs_ssh_agent_or_an_asked_passphrase(ssh_home: SshHome, tmp_path: Path) -> None:
    import subprocess

    ssh_home.trust()
    key = ssh_home.ssh_dir / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-p", "-N", "s3cret", "-f", str(key)], check=True, capture_output=True
    )
    with pytest.raises(SshError, match=r"is encrypted: load it into ssh-agent \(ssh-add "):
        connect("box").close()
    asked: list[str] = []

    def ask(path: str) -> str:
        asked.append(path)
        return "s3cret"

    connect("box", ask_passphrase=ask).close()
    connect("box", ask_passphrase=ask).close()
    assert asked == [str(key)]  # asked once, then kept in memory
    result = gpudeck("hosts", "add", "enc", "box", "--agent-dir", str(ssh_home.agent_dir), cwd=tmp_path)
    assert result.returncode == 4 and "ssh-add" in result.stderr and "s3cret" not in result.stderr
