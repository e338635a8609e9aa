"""Which keys are offered, as ssh offers them: IdentitiesOnly with ssh-agent keys and default keys."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.sshd import SshHome
from tui.remote.ssh_connect import SshError, connect


def _box(ssh_home: SshHome, extra: str) -> None:
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n{extra}")


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
    subprocess.run(["ssh-keygen", "-q", "-p", "-N", "s3cret", "-f", str(key)], check=True, capture_output=True)
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
