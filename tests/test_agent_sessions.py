"""`serve --sessions` (remote_agent/serving/sessions.py): one serve, many clients' sessions, each with
its own hello, request ids and subscriptions; a session's end cancels what it subscribed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jobs import launch
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient


class Mux:
    """A master's side of the framing, as warm_serve.py speaks it: lines per session."""

    def __init__(self, agent_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "remote_agent", "serve", "--sessions", "--agent-dir", str(agent_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.got: dict[int, list[dict]] = defaultdict(list)
        self.heads: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while head := out.readline():
            self.heads.append(head)
            parts = head.split()
            if parts[0] == b"D":
                data = out.read(int(parts[2]))
                self.got[int(parts[1])] += [json.loads(line) for line in data.splitlines()]

    def send(self, frame: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame)
        self.proc.stdin.flush()

    def request(self, sid: int, obj: dict) -> None:
        line = json.dumps(obj).encode() + b"\n"
        self.send(b"D %d %d\n" % (sid, len(line)) + line)

    def answer(self, sid: int, rid: object) -> dict:
        return wait_for(
            lambda: next((o for o in self.got[sid] if o.get("id") == rid), None), what=f"answer {rid}"
        )

    def pushes(self, sid: int) -> int:
        return sum(1 for o in self.got[sid] if o.get("push") == "output")


@pytest.fixture
def mux(agent_dir: Path) -> Iterator[Mux]:
    m = Mux(agent_dir)
    yield m
    assert m.proc.stdin is not None
    m.proc.stdin.close()
    m.proc.wait(timeout=30)


def test_each_session_has_its_own_hello_and_ids(mux: Mux) -> None:
    mux.send(b"O 1\nO 2\n")
    hellos = [wait_for(lambda s=s: mux.got[s], what="hello")[0] for s in (1, 2)]
    assert [h["session"] for h in hellos] == [1, 2]
    assert hellos[0]["pid"] == hellos[1]["pid"] == mux.proc.pid  # one process serves both
    assert mux.heads[0].startswith(b"S gpudeck-sessions ")  # what a master skips chatter up to
    mux.request(1, {"id": 7, "op": "ping"})
    mux.request(2, {"id": 7, "op": "nosuch"})
    assert mux.answer(1, 7)["ok"] is True  # the same id on two sessions: each gets its own answer
    assert "unknown op" in mux.answer(2, 7)["error"]


def test_a_closed_session_stops_its_follow_and_keeps_the_others(
    mux: Mux, client: AgentClient, workdir: Path
) -> None:
    code = "import time\nfor i in range(100000):\n    print('tick', i, flush=True); time.sleep(0.02)"
    job = launch(client, workdir, [sys.executable, "-c", code])["id"]
    mux.send(b"O 1\nO 2\n")
    for sid in (1, 2):
        mux.request(sid, {"id": 1, "op": "follow", "job": job, "node": "0", "offset": 0})
        assert mux.answer(sid, 1)["ok"]
    wait_for(lambda: mux.pushes(1) > 2 and mux.pushes(2) > 2, timeout=30, what="both sessions' output")
    mux.send(b"C 1\n")
    mux.request(2, {"id": 2, "op": "ping"})
    mux.answer(2, 2)  # the close was read before this: session 1 gets nothing more from here on
    after_close = mux.pushes(1)
    seen = mux.pushes(2)
    wait_for(lambda: mux.pushes(2) > seen + 5, timeout=30, what="session 2's output going on")
    assert mux.pushes(1) == after_close
    client.request("kill", job=job, node="0")


def test_a_frame_out_of_step_ends_serve(mux: Mux) -> None:
    mux.send(b"hello there\n")
    assert mux.proc.wait(timeout=30) == 0


def test_a_paused_session_waits_and_the_others_go_on(mux: Mux, client: AgentClient, workdir: Path) -> None:
    """`P N` (its command reads slowly, warm_outbox.py) holds only session N's writers; `R N` resumes."""
    code = "import time\nfor i in range(100000):\n    print('tick', i, flush=True); time.sleep(0.02)"
    job = launch(client, workdir, [sys.executable, "-c", code])["id"]
    mux.send(b"O 1\nO 2\n")
    for sid in (1, 2):
        mux.request(sid, {"id": 1, "op": "follow", "job": job, "node": "0", "offset": 0})
        assert mux.answer(sid, 1)["ok"]
    wait_for(lambda: mux.pushes(1) > 2 and mux.pushes(2) > 2, timeout=30, what="both sessions' output")
    mux.send(b"P 1\n")
    mux.request(2, {"id": 2, "op": "ping"})
    mux.answer(2, 2)  # the pause was read before this
    paused_at = mux.pushes(1)
    seen = mux.pushes(2)
    wait_for(lambda: mux.pushes(2) > seen + 5, timeout=30, what="session 2's output going on")
    assert mux.pushes(1) <= paused_at + 1  # at most the push its writer was already making
    mux.send(b"R 1\n")
    wait_for(lambda: mux.pushes(1) > paused_at + 2, timeout=30, what="session 1 resumed")
    client.request("kill", job=job, node="0")
