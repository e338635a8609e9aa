"""An OpenSSH ControlPath from ~/.ssh/config, expanded as ssh expands it (tui/remote/openssh_master.py)."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest

from tui.remote.openssh_master import control_path, openssh_transport
from tui.remote.ssh_connect import resolve_target


@pytest.fixture
def ssh_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUDECK_SSH_HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    return tmp_path / ".ssh"


def test_tokens_are_expanded_as_ssh_does(ssh_dir: Path) -> None:
    (ssh_dir / "config").write_text(
        "Host box\n  HostName 10.1.2.3\n  Port 2222\n  User alice\n  ControlPath ~/.ssh/cm-%r@%h:%p-%n-%C\n"
    )
    target, _ = resolve_target("box")
    local = socket.gethostname()
    digest = hashlib.sha1(f"{local}10.1.2.32222alice".encode()).hexdigest()
    assert control_path(target) == f"{ssh_dir}/cm-alice@10.1.2.3:2222-box-{digest}"


def test_no_controlpath_or_none_is_none(ssh_dir: Path) -> None:
    (ssh_dir / "config").write_text("Host box\n  HostName 10.1.2.3\nHost other\n  ControlPath none\n")
    assert control_path(resolve_target("box")[0]) is None
    assert control_path(resolve_target("other")[0]) is None


def test_a_path_where_no_master_answers_is_not_used(ssh_dir: Path) -> None:
    (ssh_dir / "config").write_text(f"Host box\n  HostName 127.0.0.1\n  ControlPath {ssh_dir}/nobody-%h\n")
    assert openssh_transport(resolve_target("box")[0]) is None  # gpudeck's own warm connection is used
