"""User certificates (CertificateFile, and `<identity>-cert.pub` beside a key) log in as with ssh,
against a real sshd that trusts a user CA and has no authorized key for us."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sshd import Sshd, host_key_line, keygen, make_sshd
from tui.remote.ssh_config import load_config, resolve
from tui.remote.ssh_connect import SshError, connect

pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/sbin/sshd"), reason="openssh-server is not installed"
)


@pytest.fixture(scope="module")
def ca_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    root = tmp_path_factory.mktemp("ca-sshd")
    ca = keygen(root / "user_ca")
    server = make_sshd(root, extra=[f"TrustedUserCAKeys {ca}.pub"])
    (server.root / "authorized_keys").write_text("")  # only a certificate gets in
    yield server
    server.stop()


def sign(ca: Path, pub: Path, principal: str, out_name: str) -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-s", str(ca), "-I", "gpudeck-test", "-n", principal, "-V", "-5m:+1h", str(pub)],
        check=True,
        capture_output=True,
    )
    made = pub.with_name(pub.name.removesuffix(".pub") + "-cert.pub")
    target = pub.with_name(out_name)
    if made != target:
        made.rename(target)
    return target


@pytest.fixture
def home(ca_sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    gpudeck_home = tmp_path / "gpudeck"
    gpudeck_home.mkdir()
    (gpudeck_home / "known_hosts").write_text(host_key_line(ca_sshd))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPUDECK_SSH_HOME", str(home))  # ssh reads the passwd home: ours
    monkeypatch.setenv("GPUDECK_HOME", str(gpudeck_home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


def _config(home: Path, server: Sshd, extra: str) -> None:
    (home / ".ssh" / "config").write_text(
        f"Host box\n  HostName 127.0.0.1\n  Port {server.port}\n  User root\n  IdentitiesOnly yes\n{extra}"
    )


def test_certificatefile_logs_in(ca_sshd: Sshd, home: Path) -> None:
    key = keygen(home / ".ssh" / "work_key")
    sign(ca_sshd.root / "user_ca", key.with_name("work_key.pub"), "root", "issued.pub")
    _config(home, ca_sshd, "  IdentityFile ~/.ssh/work_key\n  CertificateFile ~/.ssh/issued.pub\n")
    assert resolve("box", config=load_config()).certificate_files == [str(home / ".ssh" / "issued.pub")]
    conn = connect("box", timeout=10)
    try:
        assert conn.transport.is_authenticated()
    finally:
        conn.close()


def test_a_cert_beside_the_key_is_used_as_ssh_does(ca_sshd: Sshd, home: Path) -> None:
    key = keygen(home / ".ssh" / "id_ed25519")  # a default key with id_ed25519-cert.pub beside it
    sign(ca_sshd.root / "user_ca", key.with_name("id_ed25519.pub"), "root", "id_ed25519-cert.pub")
    _config(home, ca_sshd, "")
    connect("box", timeout=10).close()


def test_a_cert_for_another_principal_or_key_is_refused_in_one_line(ca_sshd: Sshd, home: Path) -> None:
    key = keygen(home / ".ssh" / "work_key")
    other = keygen(home / ".ssh" / "other_key")
    sign(ca_sshd.root / "user_ca", key.with_name("work_key.pub"), "someone-else", "wrong_principal.pub")
    sign(ca_sshd.root / "user_ca", other.with_name("other_key.pub"), "root", "for_other_key.pub")
    _config(
        home,
        ca_sshd,
        "  IdentityFile ~/.ssh/work_key\n  CertificateFile ~/.ssh/wrong_principal.pub\n"
        "  CertificateFile ~/.ssh/for_other_key.pub\n",
    )
    with pytest.raises(SshError) as refused:
        connect("box", timeout=10)
    assert "permission denied" in str(refused.value) and len(str(refused.value).splitlines()) == 1


def test_the_plain_key_is_still_offered_after_a_refused_certificate(ca_sshd: Sshd, home: Path) -> None:
    key = keygen(home / ".ssh" / "id_ed25519")
    sign(ca_sshd.root / "user_ca", key.with_name("id_ed25519.pub"), "someone-else", "id_ed25519-cert.pub")
    authorized = ca_sshd.root / "authorized_keys"
    authorized.write_text(key.with_name("id_ed25519.pub").read_text())  # the key itself is allowed
    _config(home, ca_sshd, "")
    try:
        connect("box", timeout=10).close()  # paramiko alone would offer only the certificate
    finally:
        authorized.write_text("")


def test_an_agent_holding_the_key_and_its_certificate_logs_in(ca_sshd: Sshd, home: Path, agent: Path) -> None:
    key = keygen(home / ".ssh" / "hw_key")
    sign(ca_sshd.root / "user_ca", key.with_name("hw_key.pub"), "root", "hw_key-cert.pub")
    subprocess.run(["ssh-add", str(key)], check=True, capture_output=True)  # adds hw_key-cert.pub too
    key.unlink()
    key.with_name("hw_key-cert.pub").unlink()  # only the agent has them now
    _config(home, ca_sshd, "  IdentityFile ~/.ssh/hw_key.pub\n")
    connect("box", timeout=10).close()


def test_a_certificatefile_goes_with_the_agents_copy_of_its_key(
    ca_sshd: Sshd, home: Path, agent: Path
) -> None:
    # A hardware-backed or password-manager agent holds the private key; the certificate is a file.
    key = keygen(home / ".ssh" / "hw_key")
    cert = sign(ca_sshd.root / "user_ca", key.with_name("hw_key.pub"), "root", "issued.pub")
    subprocess.run(["ssh-add", str(key)], check=True, capture_output=True)
    key.unlink()
    _config(home, ca_sshd, f"  IdentityFile ~/.ssh/hw_key.pub\n  CertificateFile {cert}\n")
    connect("box", timeout=10).close()
