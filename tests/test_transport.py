"""The local transport's edges: a frozen agent is closed without hanging the caller."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport


@pytest.mark.slow
def test_closing_a_frozen_local_agent_returns(agent_dir: Path) -> None:
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    proc = client.transport.proc  # type: ignore[attr-defined]
    os.kill(proc.pid, signal.SIGSTOP)
    done = threading.Event()
    threading.Thread(target=lambda: (client.close(), done.set()), daemon=True).start()
    assert done.wait(60), "close() hung on a frozen agent"
    assert proc.poll() is not None
