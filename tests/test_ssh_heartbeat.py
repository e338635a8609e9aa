"""`serve --heartbeat S`: pushes a heartbeat every S seconds and exits when its client goes silent."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


def _serve(agent_dir: Path, heartbeat: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "remote_agent", "serve", "--agent-dir", str(agent_dir), "--heartbeat", str(heartbeat)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def test_heartbeats_are_pushed_and_pings_keep_serve_alive(tmp_path: Path) -> None:
    proc = _serve(tmp_path / "agent", 0.2)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert json.loads(proc.stdout.readline())["gpudeck"] == "agent"
        beats, start = 0, time.monotonic()
        while beats < 8:  # 1.6 s: twice the 4-beat silence limit, kept alive by our pings
            proc.stdin.write(b'{"id": "ping", "op": "ping"}\n')
            proc.stdin.flush()
            obj = json.loads(proc.stdout.readline())
            if obj.get("push") == "heartbeat":
                beats += 1
                assert isinstance(obj["t"], float)
        assert proc.poll() is None and time.monotonic() - start < 5
    finally:
        proc.kill()
        proc.wait()


def test_serve_exits_when_the_client_goes_silent(tmp_path: Path) -> None:
    proc = _serve(tmp_path / "agent", 0.2)
    try:
        start = time.monotonic()
        assert proc.wait(timeout=10) == 0  # stdin still open: only the silence tells
        assert time.monotonic() - start < 3
    finally:
        proc.kill()
        proc.wait()



def test_the_watcher_wakes_on_a_write_long_before_its_timeout(tmp_path: Path) -> None:
    from remote_agent.watch import Watcher, file_watcher

    path = tmp_path / "journal"
    path.write_bytes(b"")
    watcher = file_watcher(str(path))
    assert watcher is not None and watcher.native  # Linux: inotify through ctypes
    try:
        with open(path, "ab") as f:
            f.write(b"x\n")
        start = time.monotonic()
        watcher.wait(5.0)
        assert time.monotonic() - start < 1.0
        waker = Watcher()
        waker.wake()
        start = time.monotonic()
        waker.wait(5.0)
        assert time.monotonic() - start < 1.0
        waker.close()
        waker.wake()  # after close: a no-op, never a write to a reused descriptor
    finally:
        watcher.close()
