"""Host keys checked as OpenSSH checks them, against a real sshd: other-type keys are CHANGED, any
matching line accepts, @revoked refuses, @cert-authority without a certificate, every known_hosts file ssh reads."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.conftest import gpudeck
from tests.support.sshd import SshHome, host_key_line, keygen, ssh_verdict
from tui.errors import EXIT_HOSTKEY
from tui.remote import hostkey_errors
from tui.remote.hostkey_errors import HostKeyChanged, HostKeyRevoked, HostKeyUnknown
from tui.remote.hostkeys import GLOBAL_FILES, KnownHosts
from tui.remote.ssh_connect import connect


def _line(ssh_home: SshHome, pub: Path, marker: str = "", name: str | None = None) -> str:
    kind, blob = pub.read_text().split()[:2]
    name = name or f"[127.0.0.1]:{ssh_home.server.port}"
    return f"{marker + ' ' if marker else ''}{name} {kind} {blob}\n"


def _impostor(tmp_path: Path, kind: str = "ed25519") -> Path:
    return keygen(tmp_path / f"impostor_{kind}", kind).with_suffix(".pub")


def test_a_key_of_another_type_than_the_known_one_is_changed_not_unknown(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    # The server offers ed25519; only an ECDSA key is known for it: ssh says the identification changed.
    (ssh_home.gpudeck_home / "known_hosts").write_text(_line(ssh_home, _impostor(tmp_path, "ecdsa")))
    with pytest.raises(HostKeyChanged, match="HAS CHANGED.*ecdsa-sha2-nistp256"):
        connect("box", confirm=lambda name, key: True).close()  # even a yes does not override it
    ssh_home.add_host()
    trusted = gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path)
    assert trusted.returncode == EXIT_HOSTKEY and "HAS CHANGED" in trusted.stderr, trusted.stderr
    assert len(trusted.stderr.strip().splitlines()) == 1
    assert "ssh-ed25519" not in (ssh_home.gpudeck_home / "known_hosts").read_text()  # nothing was added


def test_a_known_key_of_another_type_in_the_users_file_under_the_alias_counts_too(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n"
        "  HostKeyAlias gpu-Box\n"
    )
    # ssh looks a HostKeyAlias up as written, without `[…]:port`, whatever the port
    (ssh_home.ssh_dir / "known_hosts").write_text(_line(ssh_home, _impostor(tmp_path, "rsa"), name="gpu-box"))
    with pytest.raises(HostKeyChanged, match=r"known_hosts:1 holds ssh-rsa"):
        connect("box").close()


@pytest.mark.slow
def test_a_host_key_alias_is_looked_up_without_the_port_as_ssh_does(ssh_home: SshHome) -> None:
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n"
        "  HostKeyAlias gpu-box\n"
    )
    key_line = host_key_line(ssh_home.server)
    (ssh_home.ssh_dir / "known_hosts").write_text(
        key_line.replace(f"[127.0.0.1]:{ssh_home.server.port}", "gpu-box")
    )
    connect("box").close()
    assert _ssh_accepts(ssh_home)
    (ssh_home.ssh_dir / "known_hosts").write_text(
        key_line.replace(f"[127.0.0.1]:{ssh_home.server.port}", f"[gpu-box]:{ssh_home.server.port}")
    )
    with pytest.raises(HostKeyUnknown):  # as ssh, which does not read this one
        connect("box").close()
    assert not _ssh_accepts(ssh_home)


def _ssh_accepts(ssh_home: SshHome) -> bool:
    return ssh_verdict(ssh_home) == "ok"


def _gpudeck_verdict() -> str:
    try:
        connect("box").close()
    except HostKeyChanged:
        return "changed"
    except HostKeyUnknown:
        return "unknown"
    return "ok"


@pytest.mark.slow
def test_a_port_less_line_counts_off_port_22_exactly_as_far_as_ssh_lets_it(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    # ssh 9 looks up `[host]:port`; only when no line names that at all does a bare `host` line
    # holding the very key accept it (a different key there is unknown, not changed).
    right = host_key_line(ssh_home.server)
    bare_right = right.replace(f"[127.0.0.1]:{ssh_home.server.port}", "127.0.0.1")
    bare_wrong = _line(ssh_home, _impostor(tmp_path), name="127.0.0.1")
    port_wrong = _line(ssh_home, _impostor(tmp_path, "ecdsa"))
    cases = {
        "bare right": (bare_right, "ok"),
        "bare wrong": (bare_wrong, "unknown"),
        "port wrong, bare right": (port_wrong + bare_right, "changed"),
    }
    for name, (text, expected) in cases.items():
        (ssh_home.ssh_dir / "known_hosts").write_text(text)
        assert (ssh_verdict(ssh_home), _gpudeck_verdict()) == (expected, expected), name


def test_any_matching_line_accepts_a_stale_one_of_the_same_type_does_not_make_it_changed(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    stale = _line(ssh_home, _impostor(tmp_path))
    (ssh_home.ssh_dir / "known_hosts").write_text(stale + host_key_line(ssh_home.server))
    connect("box").close()
    (ssh_home.ssh_dir / "known_hosts").write_text(stale)
    (ssh_home.gpudeck_home / "known_hosts").write_text(host_key_line(ssh_home.server))  # across files as well
    connect("box").close()


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_revoked_keys_are_refused_and_marker_lines_break_no_host(ssh_home: SshHome, tmp_path: Path) -> None:
    server_pub = ssh_home.server.host_key.with_suffix(".pub")
    ca = _impostor(tmp_path, "ecdsa")
    (ssh_home.ssh_dir / "known_hosts").write_text(
        _line(ssh_home, _impostor(tmp_path), "@revoked", name="*")  # someone else's revoked key
        + _line(ssh_home, ca, "@cert-authority", name="*")
        + host_key_line(ssh_home.server)
    )
    connect("box").close()  # plain keys still work beside marker lines
    ssh_home.add_host()
    listed = gpudeck("hosts", "trust", "box", cwd=tmp_path)
    assert listed.returncode == 0 and "internal error" not in listed.stderr, listed.stderr

    with open(ssh_home.ssh_dir / "known_hosts", "a") as f:
        f.write(_line(ssh_home, server_pub, "@revoked", name="*"))
    with pytest.raises(HostKeyRevoked, match="REVOKED"):
        connect("box").close()
    refused = gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path)
    assert refused.returncode == EXIT_HOSTKEY and "REVOKED" in refused.stderr


def test_a_cert_authority_line_alone_leaves_the_key_unknown_and_says_why(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    (ssh_home.ssh_dir / "known_hosts").write_text(
        _line(ssh_home, _impostor(tmp_path), "@cert-authority", "*")
    )
    with pytest.raises(HostKeyUnknown, match="offered no host certificate"):  # this server has none
        connect("box").close()


def test_hashed_lines_and_host_patterns_match(ssh_home: SshHome, tmp_path: Path) -> None:
    kh = ssh_home.ssh_dir / "known_hosts"
    kh.write_text(host_key_line(ssh_home.server))
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(kh)], check=True, capture_output=True)
    assert kh.read_text().startswith("|1|")
    connect("box").close()
    kh.write_text(_line(ssh_home, ssh_home.server.host_key.with_suffix(".pub"), name="[127.0.0.?]:*,!other"))
    connect("box").close()
    kh.write_text(
        _line(
            ssh_home,
            ssh_home.server.host_key.with_suffix(".pub"),
            name=f"[127.0.0.?]:*,![127.0.0.1]:{ssh_home.server.port}",
        )
    )
    with pytest.raises(HostKeyUnknown):
        connect("box").close()


def _ed25519() -> paramiko.Ed25519Key:
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    return paramiko.Ed25519Key(file_obj=io.StringIO(pem.decode()))


def test_host_names_compare_case_blind_so_an_old_key_reads_changed(tmp_path: Path) -> None:
    # ssh lower-cases the host name before the lookup and compares patterns case-blind: an old key
    # under Host.Example.COM is host.example.com's key, so a new one is CHANGED, never UNKNOWN.
    old, new = _ed25519(), _ed25519()
    kh = tmp_path / "known_hosts"
    kh.write_text(f"Host.Example.COM {old.get_name()} {old.get_base64()}\n")
    known = KnownHosts((kh,))
    for name in ("host.example.com", "HOST.example.com", "Host.Example.COM"):
        known.check(name, old)
        with pytest.raises(HostKeyChanged):
            known.check(name, new)
    kh.write_text(f"*.EXAMPLE.com,!Other.Example.COM {old.get_name()} {old.get_base64()}\n")  # patterns too
    with pytest.raises(HostKeyChanged):
        known.check("host.example.com", new)
    with pytest.raises(HostKeyUnknown):
        known.check("other.example.com", new)  # the negation vetoes it whatever its case


@pytest.mark.slow  # ssh-keygen, the oracle
def test_mixed_case_lines_match_as_ssh_keygen_finds_them(tmp_path: Path) -> None:
    old, new = _ed25519(), _ed25519()
    kh = tmp_path / "known_hosts"
    kh.write_text(f"Host.Example.COM {old.get_name()} {old.get_base64()}\n")
    found = subprocess.run(
        ["ssh-keygen", "-F", "host.example.com", "-f", str(kh)], capture_output=True, text=True
    )
    assert found.returncode == 0 and "found: line 1" in found.stdout  # ssh's own lookup matches the line
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(kh)], check=True, capture_output=True)
    assert kh.read_text().startswith("|1|")  # hashed from the lower-cased name, as ssh looks it up
    with pytest.raises(HostKeyChanged):
        KnownHosts((kh,)).check("Host.Example.COM", new)


def test_user_and_global_known_hosts_files_from_the_config_are_read(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    assert KnownHosts.default().files[2:4] == tuple(Path(p) for p in GLOBAL_FILES)  # /etc/ssh, as ssh reads
    glob_file, user_file = tmp_path / "global_kh", ssh_home.home / "kh" / "box_%h"
    glob_file.write_text(host_key_line(ssh_home.server))
    base = f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n"
    ssh_home.write_ssh_config(base + f"  GlobalKnownHostsFile {glob_file}\n")
    connect("box").close()
    user_file.parent.mkdir()
    Path(str(user_file).replace("%h", "127.0.0.1")).write_text(host_key_line(ssh_home.server))
    ssh_home.write_ssh_config(base + "  UserKnownHostsFile ~/kh/box_%h\n")
    connect("box").close()
    ssh_home.write_ssh_config(base + "  UserKnownHostsFile /nonexistent\n")
    with pytest.raises(HostKeyUnknown):
        connect("box").close()


@pytest.mark.parametrize("mode", ["accept-new", "no"])
def test_strict_host_key_checking_accept_new_and_no_add_a_new_key_but_never_a_changed_one(
    ssh_home: SshHome, tmp_path: Path, mode: str
) -> None:
    config = f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n  StrictHostKeyChecking {mode}\n"
    ssh_home.write_ssh_config(config)
    connect("box").close()  # nobody to ask, and no need: the new key is added
    assert host_key_line(ssh_home.server) in (ssh_home.gpudeck_home / "known_hosts").read_text()
    assert any("trusted (StrictHostKeyChecking" in n for n in hostkey_errors.notices)
    (ssh_home.gpudeck_home / "known_hosts").write_text(_line(ssh_home, _impostor(tmp_path)))
    with pytest.raises(HostKeyChanged):
        connect("box").close()


@pytest.mark.slow  # a CLI process
@pytest.mark.parametrize(
    "spelling", ["yes", "true", "TRUE"]
)  # ssh reads `true` as `yes` (and `ssh -G` writes it)
def test_strict_host_key_checking_yes_never_adds_a_key_even_when_told_to_trust(
    ssh_home: SshHome, tmp_path: Path, spelling: str
) -> None:
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n"
        f"  StrictHostKeyChecking {spelling}\n"
    )
    with pytest.raises(HostKeyUnknown, match="StrictHostKeyChecking yes: add it to known_hosts yourself"):
        connect("box", confirm=lambda name, key: True).close()  # the TUI shows this line
    ssh_home.add_host()
    refused = gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path)
    assert refused.returncode == EXIT_HOSTKEY and "StrictHostKeyChecking is yes" in refused.stderr, (
        refused.stderr
    )
    assert len(refused.stderr.strip().splitlines()) == 1
    assert (
        not (ssh_home.gpudeck_home / "known_hosts").exists()
        or "ssh-ed25519" not in (ssh_home.gpudeck_home / "known_hosts").read_text()
    )
    (ssh_home.ssh_dir / "known_hosts").write_text(
        host_key_line(ssh_home.server)
    )  # the user adds it: it works
    connect("box").close()


def test_batch_mode_asks_nobody_about_an_unknown_key(ssh_home: SshHome) -> None:
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n  BatchMode yes\n"
    )
    asked: list[str] = []
    with pytest.raises(HostKeyUnknown):
        connect("box", confirm=lambda name, key: asked.append(name) or True).close()
    assert asked == []


@pytest.mark.slow  # the real ssh beside gpudeck
@pytest.mark.parametrize("marker", ["@REVOKED", "@Revoked", "@revoked @cert-authority"])
def test_a_line_with_a_marker_ssh_does_not_know_is_skipped_whole(ssh_home: SshHome, marker: str) -> None:
    # hostfile.c check_markers: `@cert-authority` and `@revoked`, case and all, one of them; any other
    # marker makes the line invalid, and ssh skips it (it revokes nothing).
    server_pub = ssh_home.server.host_key.with_suffix(".pub")
    (ssh_home.ssh_dir / "known_hosts").write_text(
        host_key_line(ssh_home.server) + _line(ssh_home, server_pub, marker, "*")
    )
    assert (ssh_verdict(ssh_home), _gpudeck_verdict()) == ("ok", "ok")


@pytest.mark.slow  # a CLI process
def test_trust_appends_to_a_known_hosts_file_without_a_final_newline(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    own = ssh_home.gpudeck_home / "known_hosts"
    other = _line(ssh_home, _impostor(tmp_path), name="other.example").rstrip("\n")
    own.write_text(other)  # written by hand or by another tool: no final newline
    ssh_home.add_host()
    trusted = gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr
    connect("box").close()  # the host is known now, asking nobody
    for name in (
        "other.example",
        f"[127.0.0.1]:{ssh_home.server.port}",
    ):  # and both lines read as ssh reads them
        found = subprocess.run(["ssh-keygen", "-F", name, "-f", str(own)], capture_output=True, text=True)
        assert found.returncode == 0, (name, own.read_text())
    assert own.read_text().startswith(other + "\n")
