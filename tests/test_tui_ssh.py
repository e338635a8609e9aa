"""The app against a real sshd on 127.0.0.1: an unknown host key opens the modal with its SHA256
fingerprint and, once accepted, the host connects and the key is remembered; a changed key shows
the warning, which offers no way to accept it, and the host stays unreachable."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import Button, Label

from tests.support.sshd import SshHome, host_key_line, keygen
from tui.app import GpuDeckApp
from tui.screens.hostkey import HostKeyScreen


def _server_fingerprint(home: SshHome) -> str:
    import subprocess

    out = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(home.server.host_key.with_suffix(".pub"))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()[1]  # "256 SHA256:… comment (ED25519)"


async def _run(expect_changed: bool) -> tuple[list[str], str, str, str | None]:
    app = GpuDeckApp()
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(400):
            if isinstance(app.screen, HostKeyScreen) and app.screen.query(Button):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, HostKeyScreen), "no host key dialog"
        buttons = [str(b.id) for b in app.screen.query(Button)]
        text = " ".join(str(label.render()) for label in app.screen.query(Label))
        if expect_changed:
            await pilot.press("escape")
        else:
            app.screen.query_one("#accept", Button).press()
        box = None
        for _ in range(600):
            box = app.fleet.hosts.get("box")
            if box is not None and (box.up if not expect_changed else box.status == "unreachable"):
                break
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        assert box is not None
        return buttons, text, box.status, box.reason


@pytest.mark.slow
def test_unknown_key_is_asked_and_remembered(ssh_home: SshHome) -> None:
    ssh_home.add_host("box", "box")
    buttons, text, status, _ = asyncio.run(_run(expect_changed=False))
    assert buttons == ["accept", "reject"]
    assert "Unknown host key" in text and _server_fingerprint(ssh_home) in text
    assert status == "connected"
    known = (ssh_home.gpudeck_home / "known_hosts").read_text()
    assert host_key_line(ssh_home.server).split()[2] in known


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_changed_key_cannot_be_accepted(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.add_host("box", "box")
    other = keygen(tmp_path / "impostor")
    kind, blob = other.with_suffix(".pub").read_text().split()[:2]
    (ssh_home.gpudeck_home / "known_hosts").write_text(f"[127.0.0.1]:{ssh_home.server.port} {kind} {blob}\n")
    buttons, text, status, reason = asyncio.run(_run(expect_changed=True))
    assert buttons == ["reject"] and "CHANGED" in text and _server_fingerprint(ssh_home) in text
    assert status == "unreachable" and reason and "CHANGED" in reason
