"""The local transport's edges: a frozen agent is closed without hanging the caller."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport


def test_closing_a_frozen_local_agent_returns(agent_dir: Path) -> None:
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    proc = client.transport.proc  # type: ignore[attr-defined]
    os.kill(proc.pid, signal.SIGSTOP)
    done = threading.Event()
    threading.Thread(target=lambda: (client.close(), done.set()), daemon=True).start()
    start = time.monotonic()
    assert done.wait(10), "close() hung on a frozen agent"
    assert time.monotonic() - start < 6
    assert proc.poll() is not None
