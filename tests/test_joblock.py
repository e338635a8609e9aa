"""A supervisor starting while a look (the keeper, a listing ending a lost job) holds its node's lock
for an instant waits it out; before, it left as "already supervised" and the launch failed with
"the supervisor died at start: no output" (seen once in four bench runs under load)."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from remote_agent.supervision.joblock import take


def test_a_lock_held_for_an_instant_is_waited_out_and_a_held_one_is_not(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    holder = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)
    released = threading.Timer(0.3, lambda: fcntl.flock(holder, fcntl.LOCK_UN))
    released.start()
    mine = os.open(path, os.O_RDWR)
    try:
        assert take(mine, patience=5.0)  # before: refused at once
        other = os.open(path, os.O_RDWR)
        try:
            assert not take(other, patience=0.2)  # a supervisor holds it for real
        finally:
            os.close(other)
    finally:
        released.join()
        os.close(mine)
        os.close(holder)
