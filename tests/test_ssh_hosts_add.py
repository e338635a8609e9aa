"""`hosts add` stores a host only once its key is trusted and the login worked: a refusal leaves
hosts.toml as it was, so the same command, run again, works."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import SshHome
from tui.errors import EXIT_HOST, EXIT_HOSTKEY
from tui.hosts_file import hosts_path, load_hosts

pytestmark = pytest.mark.slow  # CLI processes over real SSH


def test_a_refused_key_adds_nothing_and_the_retry_works(ssh_home: SshHome, tmp_path: Path) -> None:
    argv = ("hosts", "add", "box", "box", "--agent-dir", str(ssh_home.agent_dir))
    refused = gpudeck(*argv, cwd=tmp_path)  # not a TTY and no --yes: the unknown key is refused
    assert refused.returncode == EXIT_HOSTKEY, refused.stderr
    assert "not added" in refused.stderr
    assert "box" not in load_hosts()
    retried = gpudeck(*argv, "--yes", cwd=tmp_path)
    assert retried.returncode == 0, retried.stderr
    assert "trusted [127.0.0.1]" in retried.stdout and "agent" in retried.stdout
    assert load_hosts()["box"].target == "box"


def test_a_failed_login_adds_nothing(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    (ssh_home.ssh_dir / "id_ed25519").unlink()  # no key the server accepts
    failed = gpudeck("hosts", "add", "box", "box", "--agent-dir", str(ssh_home.agent_dir), cwd=tmp_path)
    assert (
        failed.returncode == EXIT_HOST
        and "permission denied" in failed.stderr
        and "not added" in failed.stderr
    )
    assert not hosts_path().exists() or "box" not in load_hosts()


def test_a_host_stored_before_a_failed_agent_check_is_checked_again(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.trust()
    argv = (
        "hosts",
        "add",
        "nopy",
        "box",
        "--python",
        "/nonexistent/python3",
        "--agent-dir",
        str(ssh_home.agent_dir),
    )
    first = gpudeck(*argv, cwd=tmp_path)
    assert first.returncode == EXIT_HOST and "is added; run this again" in first.stderr
    again = gpudeck(*argv, cwd=tmp_path)  # the same entry: not "already exists", the same check again
    assert (
        again.returncode == EXIT_HOST
        and "already exists" not in again.stderr
        and "no /nonexistent" in again.stderr
    )
    other = gpudeck("hosts", "add", "nopy", "elsewhere", "--no-connect", cwd=tmp_path)
    assert other.returncode != 0 and "already exists" in other.stderr  # a different host under that name
