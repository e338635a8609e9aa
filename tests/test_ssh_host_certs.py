"""Host certificates against `@cert-authority` lines, as ssh checks them, with a real sshd serving a
HostCertificate and the real ssh asked the same question each time."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import Sshd, SshHome, host_key_line, keygen, make_sshd, ssh_verdict
from tui.errors import EXIT_HOSTKEY
from tui.remote.hostkey_errors import HostKeyRevoked, HostKeyUnknown
from tui.remote.ssh_connect import connect

pytestmark = pytest.mark.slow  # a server of its own per case, and the real ssh beside gpudeck


@pytest.fixture
def cert_server(ssh_home: SshHome, tmp_path: Path) -> Iterator[Sshd]:
    server = make_sshd(tmp_path / "cert-sshd")
    (server.root / "authorized_keys").write_text(ssh_home.server.client_key.with_suffix(".pub").read_text())
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {server.port}\n  User root\n")
    yield server
    server.stop()


def serve_cert(
    server: Sshd,
    ca: Path,
    principals: str = "127.0.0.1",
    validity: str = "-5m:+1h",
    algorithm: str | None = None,
) -> None:
    """Sign the server's host key with `ca` (with that signature algorithm) and restart it offering
    that certificate."""
    pub = server.host_key.with_suffix(".pub")
    subprocess.run(
        [
            "ssh-keygen",
            "-q",
            "-s",
            str(ca),
            "-I",
            "test-host",
            "-h",
            "-n",
            principals,
            "-V",
            validity,
            *(["-t", algorithm] if algorithm else []),
            str(pub),
        ],
        check=True,
        capture_output=True,
    )
    server.stop()
    server.extra = [f"HostCertificate {server.host_key}-cert.pub"]
    server.start()


def ca_line(ca: Path, marker: str = "@cert-authority", pattern: str = "*") -> str:
    kind, blob = ca.with_suffix(".pub").read_text().split()[:2]
    return f"{marker} {pattern} {kind} {blob}\n"


def verdict() -> str:
    try:
        connect("box", timeout=10).close()
    except HostKeyUnknown as exc:
        return f"unknown: {exc}"
    except HostKeyRevoked as exc:
        return f"revoked: {exc}"
    return "ok"


def test_a_certificate_signed_by_a_known_ca_is_accepted_with_no_key_line(
    ssh_home: SshHome, cert_server: Sshd, tmp_path: Path
) -> None:
    ca = keygen(tmp_path / "host_ca")
    serve_cert(cert_server, ca, principals="127.0.0.1,*.example.test")
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca, pattern=f"[127.0.0.1]:{cert_server.port}"))
    assert (ssh_verdict(ssh_home), verdict()) == ("ok", "ok")


@pytest.mark.parametrize(
    ("how", "why"),
    [
        ({"principals": "someone-else.example"}, "not among its principals"),
        ({"validity": "20200101:20200102"}, "not valid now"),
        (
            {"principals": "127.0.0.*"},
            "not among its principals",
        ),  # host principals are literal names for ssh
    ],
)
def test_a_certificate_that_does_not_hold_leaves_the_key_unknown_and_says_why(
    ssh_home: SshHome, cert_server: Sshd, tmp_path: Path, how: dict[str, str], why: str
) -> None:
    ca = keygen(tmp_path / "host_ca")
    serve_cert(cert_server, ca, **how)
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca))
    ours = verdict()
    assert ssh_verdict(ssh_home) == "unknown" and ours.startswith("unknown") and why in ours, ours
    # as for ssh, the certificate's own key still counts when a plain line holds it
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca) + host_key_line(cert_server))
    assert (ssh_verdict(ssh_home), verdict()) == ("ok", "ok")


def test_the_cli_says_why_the_certificate_did_not_do(
    ssh_home: SshHome, cert_server: Sshd, tmp_path: Path
) -> None:
    ca = keygen(tmp_path / "host_ca")
    serve_cert(cert_server, ca, validity="20200101:20200102")  # expired
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca))
    ssh_home.add_host()
    refused = subprocess.run(
        [sys.executable, "-m", "tui", "hosts", "trust", "box"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        cwd=tmp_path,
    )  # nobody to ask: refused
    assert refused.returncode == EXIT_HOSTKEY and refused.stderr.count("\n") == 1, refused.stderr
    assert f"unknown host key for [127.0.0.1]:{cert_server.port} " in refused.stderr
    assert "its host certificate is refused: it is not valid now" in refused.stderr


def test_another_ca_or_a_revoked_ca_is_not_trusted(
    ssh_home: SshHome, cert_server: Sshd, tmp_path: Path
) -> None:
    ca, other = keygen(tmp_path / "host_ca"), keygen(tmp_path / "other_ca")
    serve_cert(cert_server, ca)
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(other))
    assert ssh_verdict(ssh_home) == "unknown" and "no @cert-authority line" in verdict()
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca) + ca_line(ca, "@revoked"))
    assert ssh_verdict(ssh_home) != "ok" and verdict().startswith("revoked:") and "@revoked" in verdict()


def test_a_revoked_ca_is_refused_not_unknown_so_trusting_cannot_add_its_host(
    ssh_home: SshHome, cert_server: Sshd, tmp_path: Path
) -> None:
    # ssh: a certificate whose CA key is @revoked is a REVOKED host key, refused with no fallback to
    # the plain key (sshconnect.c check_host_key, hostfile.c check_key_not_revoked).
    ca = keygen(tmp_path / "host_ca")
    serve_cert(cert_server, ca)
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca, "@revoked"))
    assert ssh_verdict(ssh_home) != "ok"
    with pytest.raises(HostKeyRevoked, match="REVOKED"):
        connect("box", timeout=10, confirm=lambda name, key: True).close()  # a yes does not override it
    ssh_home.add_host()
    refused = gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path)
    assert refused.returncode == EXIT_HOSTKEY and "REVOKED" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    own = ssh_home.gpudeck_home / "known_hosts"
    assert not own.exists() or "ssh-ed25519" not in own.read_text()  # nothing was trusted


def test_markers_are_read_as_ssh_reads_them_exactly(
    ssh_home: SshHome, cert_server: Sshd, tmp_path: Path
) -> None:
    # ssh knows `@cert-authority` and `@revoked` as written; any other marker drops the whole line.
    ca = keygen(tmp_path / "host_ca")
    serve_cert(cert_server, ca)
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca) + ca_line(ca, "@REVOKED"))
    assert (ssh_verdict(ssh_home), verdict()) == ("ok", "ok")
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca, "@CERT-AUTHORITY"))
    assert ssh_verdict(ssh_home) == "unknown" and verdict().startswith("unknown")


def test_a_ca_signature_made_with_sha1_is_refused_as_by_ssh(
    ssh_home: SshHome, cert_server: Sshd, tmp_path: Path
) -> None:
    ca = keygen(tmp_path / "rsa_ca", "rsa")
    serve_cert(cert_server, ca, algorithm="ssh-rsa")  # RSA with SHA-1: out of ssh's CASignatureAlgorithms
    (ssh_home.ssh_dir / "known_hosts").write_text(ca_line(ca))
    ours = verdict()
    assert ssh_verdict(ssh_home) == "unknown" and "ssh-rsa" in ours and ours.startswith("unknown"), ours
    serve_cert(cert_server, ca, algorithm="rsa-sha2-512")  # the same CA with SHA-512 is fine
    assert (ssh_verdict(ssh_home), verdict()) == ("ok", "ok")
