"""Every way an SSH connection can fail reaches the user as one line naming the cause, never as
`internal error: <paramiko exception>`: auth refused, a server that never sends its banner, one
that hangs up during key exchange, a ProxyCommand that dies at once, a refused session channel,
an unreadable key file. Each case runs the real CLI against a real server or a loopback socket."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import SshHome, host_key_line, make_sshd
from tui.errors import EXIT_HOST

pytestmark = pytest.mark.slow  # each case is a CLI process or two (~1 s)


def one_line_cause(result: object, *words: str) -> str:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.returncode == EXIT_HOST, stderr  # type: ignore[attr-defined]
    line = stderr.strip()
    assert len(line.splitlines()) == 1, stderr
    assert "internal error" not in line and "Traceback" not in line, line
    for word in words:
        assert word in line, line
    return line


@pytest.fixture
def fake_server() -> Iterator[Callable[[Callable[[socket.socket], None]], int]]:
    """A loopback TCP server that treats each connection with `behave`; returns its port."""
    listeners: list[socket.socket] = []
    held: list[socket.socket] = []

    def start(behave: Callable[[socket.socket], None]) -> int:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listeners.append(listener)

        def loop() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                held.append(conn)
                behave(conn)

        threading.Thread(target=loop, daemon=True).start()
        return int(listener.getsockname()[1])

    yield start
    for s in listeners + held:
        s.close()


def _point_box_at(ssh_home: SshHome, port: int, extra: str = "") -> None:
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  ConnectTimeout 2\n{extra}"
    )
    ssh_home.add_host()


def test_a_server_that_never_sends_its_banner(ssh_home: SshHome, tmp_path: Path, fake_server) -> None:  # type: ignore[no-untyped-def]
    _point_box_at(ssh_home, fake_server(lambda conn: None))  # accepts, then says nothing
    one_line_cause(gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path), "box", "handshake")


def _hang_up_in_kex(conn: socket.socket) -> None:
    conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
    conn.recv(4096)  # the client's banner (and maybe its KEXINIT), then hang up mid key exchange
    conn.close()


def test_a_server_that_hangs_up_during_key_exchange(ssh_home: SshHome, tmp_path: Path, fake_server) -> None:  # type: ignore[no-untyped-def]
    _point_box_at(ssh_home, fake_server(_hang_up_in_kex))
    one_line_cause(gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path), "box", "handshake")


def test_a_server_that_closes_at_once(ssh_home: SshHome, tmp_path: Path, fake_server) -> None:  # type: ignore[no-untyped-def]
    _point_box_at(ssh_home, fake_server(lambda conn: conn.close()))
    one_line_cause(gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path), "box")


def test_a_proxycommand_that_dies_at_once(ssh_home: SshHome, tmp_path: Path) -> None:
    _point_box_at(
        ssh_home, ssh_home.server.port, "  ProxyCommand sh -c 'echo no route to the bastion >&2; exit 3'\n"
    )
    for _ in range(2):  # it used to fail one way or another depending on timing
        line = one_line_cause(gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path), "box")
        assert "exited with status 3: no route to the bastion" in line  # said at once, not after a timeout


def test_a_proxycommand_that_exits_0_is_not_said_to_fail_with_nonzero(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    _point_box_at(
        ssh_home, ssh_home.server.port, "  ProxyCommand sh -c 'echo bastion said bye >&2; exit 0'\n"
    )
    line = one_line_cause(gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path), "box")
    assert "exited with status 0: bastion said bye" in line and "nonzero" not in line, line


def test_a_dead_proxycommand_is_said_the_same_on_write_as_on_read() -> None:
    # paramiko writes its banner first: a ProxyCommand already gone used to say only "Broken pipe".
    from paramiko.ssh_exception import ProxyCommandFailure

    from tui.remote.proxy_command import ShellProxyCommand

    for act in ("send", "recv"):
        proxy = ShellProxyCommand("sh -c 'echo no route >&2; exit 3'")
        proxy.process.wait(timeout=10)
        with pytest.raises(ProxyCommandFailure, match="exited with status 3: no route"):
            proxy.send(b"SSH-2.0-test\r\n" * 10000) if act == "send" else proxy.recv(100)
        proxy.close()


def test_auth_refused_names_the_user_and_host(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    _point_box_at(ssh_home, ssh_home.server.port, "  IdentityFile ~/.ssh/other\n  IdentitiesOnly yes\n")
    from tests.support.sshd import keygen

    keygen(ssh_home.ssh_dir / "other")  # a key the server does not know
    one_line_cause(gpudeck("ps", cwd=tmp_path), "root@127.0.0.1", "permission denied")


def test_an_unreadable_key_file_is_named_not_raised(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    bad = ssh_home.ssh_dir / "garbage"
    bad.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n")
    bad.chmod(0o600)
    _point_box_at(ssh_home, ssh_home.server.port, "  IdentityFile ~/.ssh/garbage\n  IdentitiesOnly yes\n")
    one_line_cause(gpudeck("ps", cwd=tmp_path), "garbage: not a private key file")


@pytest.mark.filterwarnings(
    "ignore:SSH DSA keys are deprecated"
)  # gpudeck silences it; pytest resets filters
def test_a_key_of_a_type_paramiko_cannot_load_is_skipped_not_fatal(ssh_home: SshHome, tmp_path: Path) -> None:
    # A default ~/.ssh/id_dsa (tried before id_ed25519, as ssh orders them) used to end every connection.
    import subprocess

    from tui.remote.ssh_connect import connect

    ssh_home.trust()
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "dsa", "-N", "", "-f", str(ssh_home.ssh_dir / "id_dsa")], check=True
    )
    connect("box", timeout=10).close()
    (ssh_home.ssh_dir / "id_ed25519").unlink()
    from tui.remote.ssh_connect import SshError

    with pytest.raises(SshError, match="id_dsa: this key type is not supported"):
        connect("box", timeout=10)


def test_a_jump_host_that_cannot_reach_the_target(ssh_home: SshHome, tmp_path: Path) -> None:
    from tests.support.sshd import free_port

    ssh_home.trust()
    ssh_home.write_ssh_config(
        f"Host jump\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n"
        f"Host box\n  HostName 127.0.0.1\n  Port {free_port()}\n  User root\n  ProxyJump jump\n"
    )
    ssh_home.add_host()
    line = one_line_cause(gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path), "jump host cannot reach")
    assert "ChannelException" not in line and "(2," not in line, line


def test_a_server_that_refuses_session_channels(ssh_home: SshHome, tmp_path: Path) -> None:
    server = make_sshd(tmp_path / "no-sessions", extra=["MaxSessions 0"])  # forwarding only, no exec/sftp
    try:
        (server.root / "authorized_keys").write_text(
            (ssh_home.ssh_dir / "id_ed25519.pub").read_text()
            if (ssh_home.ssh_dir / "id_ed25519.pub").exists()
            else ssh_home.server.client_key.with_suffix(".pub").read_text()
        )
        (ssh_home.gpudeck_home / "known_hosts").write_text(host_key_line(server))
        _point_box_at(ssh_home, server.port)
        one_line_cause(gpudeck("ps", cwd=tmp_path), "box", "session")
    finally:
        server.stop()
