"""The real `gpudeck` in a real terminal (tmux): it starts, shows `local` within 5 s, and `q`
quits with exit code 0. Textual draws on stderr, so nothing is redirected."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.mark.slow
def test_gpudeck_starts_shows_local_and_quits(gpudeck_home: Path, tmp_path: Path) -> None:
    sock = f"gpudeck-test-{os.getpid()}"
    tmux = ["tmux", "-L", sock]
    status = tmp_path / "exit-code"
    env = f"GPUDECK_HOME={shlex.quote(str(gpudeck_home))} HOME={shlex.quote(os.environ['HOME'])}"
    inner = f"cd {shlex.quote(str(REPO))} && {env} {shlex.quote(sys.executable)} -m tui; echo $? > {shlex.quote(str(status))}"
    subprocess.run([*tmux, "new-session", "-d", "-x", "120", "-y", "30", inner], check=True, timeout=10)
    try:

        def screen() -> str:
            return subprocess.run(
                [*tmux, "capture-pane", "-p"], capture_output=True, text=True, timeout=10
            ).stdout

        start = time.monotonic()
        while not ("local" in screen() and "connected" in screen()):
            assert time.monotonic() - start < 60.0, f"`local` never shown:\n{screen()}"
            time.sleep(0.1)
        subprocess.run([*tmux, "send-keys", "q"], check=True, timeout=10)
        start = time.monotonic()
        while not status.exists() or not status.read_text().strip():
            assert time.monotonic() - start < 60.0, f"still running after q:\n{screen()}"
            time.sleep(0.1)
        assert status.read_text().strip() == "0"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=10)
