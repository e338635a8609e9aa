"""Which keys are offered, as ssh offers them: IdentitiesOnly with ssh-agent keys and default keys, ssh's
order (against `ssh -v` and a server with MaxAuthTries 3), repeated and encrypted identity files."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sshd import Sshd, SshHome, keygen, make_sshd
from tui.remote.hostkey_errors import fingerprint
from tui.remote.ssh_config import resolve
from tui.remote.ssh_connect import SshError, connect
from tui.remote.ssh_identities import identities


def _box(ssh_home: SshHome, extra: str) -> None:
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n{extra}"
    )


def test_identities_only_without_identity_file_tries_the_default_keys(ssh_home: SshHome) -> None:
    ssh_home.trust()
    _box(ssh_home, "  IdentitiesOnly yes\n")
    connect("box").close()


def test_identities_only_uses_the_agents_copy_of_a_named_key(ssh_home: SshHome, agent: Path) -> None:
    ssh_home.trust()
    keys = ssh_home.ssh_dir / "keys"
    keys.mkdir()
    key = keys / "gpu"
    shutil.move(ssh_home.ssh_dir / "id_ed25519", key)
    shutil.copy(ssh_home.server.client_key.with_suffix(".pub"), key.with_suffix(".pub"))
    subprocess.run(["ssh-add", str(key)], check=True, capture_output=True)
    # On disk the key is now encrypted: only the agent's copy can sign without a passphrase.
    subprocess.run(
        ["ssh-keygen", "-q", "-p", "-N", "s3cret", "-f", str(key)], check=True, capture_output=True
    )
    _box(ssh_home, "  IdentitiesOnly yes\n  IdentityFile ~/.ssh/keys/gpu\n")
    connect("box").close()


def _key_only_in(agent: Path, ssh_home: SshHome) -> None:
    """The accepted key lives only in this agent: no file on disk can log in."""
    key = ssh_home.ssh_dir / "id_ed25519"
    subprocess.run(["ssh-add", str(key)], check=True, capture_output=True, env={"SSH_AUTH_SOCK": str(agent)})
    key.unlink()


def test_identity_agent_names_the_agent_socket(ssh_home: SshHome, agent: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A password manager's or a hardware key's agent, named in the config, not in $SSH_AUTH_SOCK.
    ssh_home.trust()
    _key_only_in(agent, ssh_home)
    monkeypatch.delenv("SSH_AUTH_SOCK")
    _box(ssh_home, f"  IdentityAgent {agent}\n")
    connect("box").close()
    monkeypatch.setenv("GPUDECK_TEST_AGENT", str(agent))
    _box(ssh_home, "  IdentityAgent $GPUDECK_TEST_AGENT\n")
    connect("box").close()


def test_identity_agent_none_uses_no_agent(ssh_home: SshHome, agent: Path) -> None:
    ssh_home.trust()
    _key_only_in(agent, ssh_home)
    _box(ssh_home, "  IdentityAgent none\n")  # SSH_AUTH_SOCK is set, but the config says no agent
    with pytest.raises(SshError, match="permission denied"):
        connect("box").close()


# -- ssh's order (sshconnect2.c pubkey_prepare), against a server that gives up after 3 refused keys --


@pytest.fixture(scope="module")
def few_tries(sshd: Sshd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A server with `MaxAuthTries 3` that accepts the ssh_home fixture's id_ed25519."""
    server = make_sshd(tmp_path_factory.mktemp("few-tries"), extra=["MaxAuthTries 3"])
    (server.root / "authorized_keys").write_text(sshd.client_key.with_suffix(".pub").read_text())
    yield server
    server.stop()


def _point_at(ssh_home: SshHome, server: Sshd, extra: str) -> None:
    ssh_home.trust(server)
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {server.port}\n  User root\n{extra}")


def _ssh(ssh_home: SshHome, *opts: str) -> subprocess.CompletedProcess[str]:
    """The real ssh with this test's config, agent and known host (paths in the configs here are
    absolute: ssh's `~` is the passwd home, not the test's)."""
    return subprocess.run(
        [
            "ssh",
            "-F",
            str(ssh_home.ssh_dir / "config"),
            "-o",
            f"UserKnownHostsFile={ssh_home.gpudeck_home / 'known_hosts'}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            *opts,
            "box",
            "true",
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )


def _into_agent(*keys: Path) -> None:
    for key in keys:
        subprocess.run(["ssh-add", str(key)], check=True, capture_output=True)


def _refused_keys(ssh_home: SshHome, count: int, name: str = "wrong") -> list[Path]:
    return [keygen(ssh_home.home / f"{name}{i}") for i in range(count)]


@pytest.mark.slow
def test_the_key_an_identity_file_names_goes_first_from_the_end_of_the_agent(
    ssh_home: SshHome, agent: Path, few_tries: Sshd
) -> None:
    # Five refused keys, then the accepted one, named by an IdentityFile whose .pub alone is on disk.
    key = ssh_home.ssh_dir / "id_ed25519"
    _into_agent(*_refused_keys(ssh_home, 5), key)
    key.unlink()
    shutil.copy(ssh_home.server.client_key.with_suffix(".pub"), ssh_home.ssh_dir / "gpu.pub")
    _point_at(ssh_home, few_tries, f"  IdentityFile {ssh_home.ssh_dir / 'gpu'}\n")
    assert _ssh(ssh_home).returncode == 0  # ssh offers it first: one try is enough
    connect("box", timeout=10).close()


@pytest.mark.slow
def test_keys_are_offered_in_the_order_ssh_v_lists_them(ssh_home: SshHome, agent: Path) -> None:
    # ssh: the agent keys an IdentityFile names (in the agent's order, not the config's), the agent's
    # other keys, then the identity files the agent does not hold, in config order.
    ssh_home.trust()
    w0, a, w1, b = _refused_keys(ssh_home, 4, "k")
    _into_agent(w0, a, w1, b)
    on_disk = keygen(ssh_home.ssh_dir / "on_disk")
    _box(ssh_home, "".join(f"  IdentityFile {p}\n" for p in (on_disk, b, a)))
    theirs = re.findall(r"Will attempt key: .*?(SHA256:\S+)", _ssh(ssh_home, "-v").stderr)
    ours = [fingerprint(key) for _, key, _ in identities(resolve("box")) if key is not None]
    assert ours == theirs and len(theirs) == 5, (ours, theirs)
    _box(ssh_home, f"  IdentitiesOnly yes\n  IdentityFile {b}\n  IdentityFile {on_disk}\n")
    theirs = re.findall(r"Will attempt key: .*?(SHA256:\S+)", _ssh(ssh_home, "-v").stderr)
    ours = [fingerprint(key) for _, key, _ in identities(resolve("box")) if key is not None]
    assert ours == theirs and len(theirs) == 2, (ours, theirs)


@pytest.mark.slow
def test_a_server_that_cuts_the_login_off_says_why_as_ssh_does(
    ssh_home: SshHome, agent: Path, few_tries: Sshd
) -> None:
    _into_agent(*_refused_keys(ssh_home, 6))
    _point_at(ssh_home, few_tries, "")
    theirs = _ssh(ssh_home)
    assert theirs.returncode != 0 and "Too many authentication failures" in theirs.stderr, theirs.stderr
    with pytest.raises(SshError, match="Too many authentication failures") as refused:
        connect("box", timeout=10)
    assert len(str(refused.value).splitlines()) == 1 and f"127.0.0.1:{few_tries.port}" in str(refused.value)


@pytest.mark.slow
def test_a_repeated_identity_file_is_offered_once(ssh_home: SshHome, few_tries: Sshd) -> None:
    wrong = keygen(ssh_home.ssh_dir / "wrong")
    _point_at(
        ssh_home,
        few_tries,
        f"  IdentityFile {wrong}\n" * 3 + f"  IdentityFile {ssh_home.ssh_dir / 'id_ed25519'}\n",
    )
    assert _ssh(ssh_home).returncode == 0  # one refusal, then the right key
    connect("box", timeout=10).close()


@pytest.mark.slow
def test_an_encrypted_key_in_the_agent_is_found_from_its_file_without_a_pub(
    ssh_home: SshHome, agent: Path
) -> None:
    # ssh reads the public half from the private key file itself (new-format keys keep it in the clear).
    ssh_home.trust()
    key = ssh_home.ssh_dir / "id_ed25519"  # no id_ed25519.pub beside it
    _into_agent(key)
    subprocess.run(
        ["ssh-keygen", "-q", "-p", "-N", "s3cret", "-f", str(key)], check=True, capture_output=True
    )
    assert not key.with_suffix(".pub").exists()
    _box(ssh_home, f"  IdentitiesOnly yes\n  IdentityFile {key}\n")
    assert _ssh(ssh_home).returncode == 0
    connect("box", timeout=10).close()
