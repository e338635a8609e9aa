"""Private keys that others may read are refused like ssh refuses them; files gpudeck writes are 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import SshHome
from tui.errors import EXIT_HOST
from tui.remote.recording import Recorder
from tui.remote.ssh_connect import SshError, connect


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_private_key_readable_by_others_is_refused_with_opensshs_words(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.trust()
    key = ssh_home.ssh_dir / "id_ed25519"
    os.chmod(key, 0o644)
    with pytest.raises(
        SshError, match=rf"UNPROTECTED PRIVATE KEY FILE! Permissions 0644 for '{key}' are too open"
    ):
        connect("box").close()
    ssh_home.add_host()
    result = gpudeck("hosts", "trust", "box", cwd=tmp_path)
    assert result.returncode == EXIT_HOST and "UNPROTECTED PRIVATE KEY FILE!" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    os.chmod(key, 0o640)
    with pytest.raises(SshError, match="Permissions 0640"):
        connect("box").close()
    os.chmod(key, 0o600)
    connect("box").close()


@pytest.mark.slow
def test_files_gpudeck_writes_are_owner_only_whatever_existed(ssh_home: SshHome, tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    record.write_text("old\n")
    os.chmod(record, 0o644)
    Recorder(record).close()
    assert _mode(record) == 0o600

    known = ssh_home.gpudeck_home / "known_hosts"
    known.write_text("")
    os.chmod(known, 0o644)
    ssh_home.add_host()
    hosts = ssh_home.gpudeck_home / "hosts.toml"
    os.chmod(hosts, 0o644)
    assert gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path).returncode == 0
    assert _mode(known) == 0o600 and "ssh-ed25519" in known.read_text()
    assert gpudeck("hosts", "set", "box", "price_per_hour=1.5", cwd=tmp_path).returncode == 0
    assert _mode(hosts) == 0o600
    assert gpudeck("--record", str(record), "hosts", "--json", cwd=tmp_path).returncode == 0
    assert _mode(record) == 0o600
