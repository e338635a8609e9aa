"""Nested ProxyJump as OpenSSH follows it: a first hop's own ~/.ssh/config ProxyJump, `none`, loops."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import Sshd, SshHome, make_sshd
from tui.errors import EXIT_HOSTKEY
from tui.remote.hostkey_errors import HostKeyUnknown
from tui.remote.ssh_config import SshConfig, SshConfigError, jump_chain, resolve
from tui.remote.ssh_connect import SshError, connect


def _chain(text: str, spec: str) -> list[str]:
    config = SshConfig.from_text(text)
    return [t.alias for t in jump_chain(resolve(spec, config=config), config)]


def test_a_first_hops_own_proxyjump_is_followed_and_later_hops_own_are_not() -> None:
    text = (
        "Host a\n  ProxyJump b,x\n"
        "Host b\n  ProxyJump c\n"
        "Host x\n  ProxyJump y\n"  # x is reached as `ssh -J b -W … x`: its own ProxyJump is not read
        "Host c d\n  ProxyJump none\n"
        "Host *\n  ProxyJump d\n"
    )
    assert _chain(text, "a") == ["c", "b", "x"]
    assert _chain(text, "b") == ["c"]
    assert _chain(text, "c") == []  # `ProxyJump none` wins over the later `Host *`
    assert _chain(text, "user@other:2222") == ["d"]  # Host * jumps via d, which says none
    with pytest.raises(SshConfigError, match=r"^ProxyJump loop: d -> d$"):  # without `none`, d jumps via d
        _chain(text.replace("Host c d", "Host c"), "d")
    assert _chain("Host a\n  HostName 10.0.0.1\n", "a") == []


def test_a_loop_is_one_line_naming_its_hosts(ssh_home: SshHome) -> None:
    text = "Host a\n  ProxyJump b\nHost b\n  ProxyJump root@c:2200,z\nHost c\n  ProxyJump A\n"
    with pytest.raises(SshConfigError, match=r"^ProxyJump loop: a -> b -> root@c:2200 -> A$"):
        _chain(text, "a")
    with pytest.raises(SshConfigError, match=r"^ProxyJump loop: me -> me:2222$"):
        _chain("Host me\n  ProxyJump me:2222\n", "me")
    ssh_home.write_ssh_config(text)
    with pytest.raises(SshError) as caught:
        connect("a")
    assert str(caught.value) == "a: ProxyJump loop: a -> b -> root@c:2200 -> A"


@pytest.fixture
def two_jumps(sshd: Sshd, tmp_path: Path) -> Iterator[tuple[Sshd, Sshd]]:
    servers = [make_sshd(tmp_path / name) for name in ("outer-sshd", "mid-sshd")]
    try:
        for server in servers:
            (server.root / "authorized_keys").write_text((sshd.root / "client_ed25519.pub").read_text())
        yield servers[0], servers[1]
    finally:
        for server in servers:
            server.stop()


@pytest.mark.slow
def test_nested_proxyjump_through_two_real_sshds(
    ssh_home: SshHome, two_jumps: tuple[Sshd, Sshd], tmp_path: Path
) -> None:
    outer, mid = two_jumps
    box = ssh_home.server
    ssh_home.write_ssh_config(
        f"Host outer\n  HostName 127.0.0.1\n  Port {outer.port}\n  User root\n  ProxyJump none\n"
        f"Host mid\n  HostName 127.0.0.1\n  Port {mid.port}\n  User root\n"
        f"Host box\n  HostName 127.0.0.1\n  Port {box.port}\n  User root\n  ProxyJump mid\n"
        "Host *\n  ProxyJump outer\n"
    )  # mid jumps via outer; outer's `none` stops the chain

    ssh_home.trust(box)
    ssh_home.trust(mid)
    with pytest.raises(HostKeyUnknown) as caught:  # every hop's key is checked, the innermost first
        connect("box")
    assert caught.value.name == f"[127.0.0.1]:{outer.port}"

    ssh_home.add_host()
    refused = subprocess.run(
        [sys.executable, "-m", "tui", "hosts", "trust", "box"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        cwd=tmp_path,
    )  # nobody to ask
    assert refused.returncode == EXIT_HOSTKEY and refused.stderr.count("\n") == 1, refused.stderr
    assert f"unknown host key for [127.0.0.1]:{outer.port} " in refused.stderr  # the jump host's, by name
    trusted = gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr
    assert f"[127.0.0.1]:{outer.port}" in trusted.stdout

    conn = connect("box")
    try:
        assert len(conn.hops) == 2
        assert conn.hops[0].sock.getpeername()[1] == outer.port  # dialled directly
        assert conn.hops[1].sock.get_transport() is conn.hops[0]  # mid rides on outer
        assert conn.transport.sock.get_transport() is conn.hops[1]  # box rides on mid
        assert outer.connection_pids() and mid.connection_pids()
        chan = conn.transport.open_session(timeout=10)
        chan.exec_command("echo $GPUDECK_TEST_SSHD")
        assert chan.makefile("rb").read().decode().split()[-1] == str(box.port)
    finally:
        conn.close()
