"""The job view's output tail is pushed (`follow`), not polled (`logs`): every line once, in order,
across connection cuts (the link's own, and the app's reconnect), and the agent is told to stop
when the view closes."""

from __future__ import annotations

import base64
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.tui import select_job, sync, until
from tests.support.waiting import wait_for
from tui.app import GpuDeckApp
from tui.live.inbox import Inbox
from tui.live.link import HostLink
from tui.live.output_stream import OutputStream
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport
from tui.screens.deck import DeckScreen
from tui.screens.job import JobScreen
from tui.widgets.output_log import OutputLog

COUNTED = "import time\nfor i in range({n}):\n    print(f'row {{i}}', flush=True)\n    time.sleep({pause})\n"


def push(offset: int, data: bytes, **more: Any) -> dict[str, Any]:
    return {
        "push": "output",
        "job": "j",
        "node": "0",
        "offset": offset,
        "data": base64.b64encode(data).decode(),
        **more,
    }


def test_a_stream_takes_each_byte_once_whatever_the_pushes_repeat() -> None:
    stream = OutputStream("j", "0", 1 << 20, lambda: None)
    assert stream.start_at(0) == 0
    stream.take_push(push(0, b"a\nb"))
    stream.take_push(push(0, b"a\nb"))  # a re-follow's repeat: all seen
    stream.take_push(push(2, b"b\nc\n"))  # overlaps what was taken: cut
    stream.take_push(push(9, b"zzz\n"))  # past the next byte owed: a stale subscription's, dropped
    stream.take_push({"push": "output_end", "job": "j", "node": "0", "offset": 3})  # bytes still owed
    assert stream.take() == ["a", "b", "c"] and stream.end is None
    stream.take_push({"push": "output_end", "job": "j", "node": "0", "offset": 6, "error": None})
    assert stream.end is not None


def test_a_stream_that_starts_mid_file_drops_the_partial_first_line() -> None:
    stream = OutputStream("j", "0", 4, lambda: None)
    assert stream.start_at(10) == 6 and stream.skipped == 6
    stream.take_push(push(6, b"ow\nlast\n"))
    assert stream.take() == ["last"]


@pytest.mark.slow
def test_the_link_follows_again_from_the_next_byte_after_cuts(
    agent_dir: Path, client: AgentClient, workdir: Path
) -> None:
    n = 400
    job = launch(client, workdir, [sys.executable, "-c", COUNTED.format(n=n, pause=0.005)])
    transports: list[LocalTransport] = []

    def transport_for(host: str) -> LocalTransport:
        transports.append(LocalTransport(agent_dir))
        return transports[-1]

    link = HostLink("local", Inbox(), transport_for)
    link.connect()
    woken = threading.Event()
    stream = OutputStream(job["id"], "0", 1 << 30, woken.set)
    got: list[str] = []

    def take() -> int:
        got.extend(stream.take())
        return len(got)

    link.follow_output(stream)
    try:
        for cut_at in (50, 200):
            wait_for(lambda at=cut_at: take() >= at, timeout=30.0, what=f"{cut_at} lines")
            assert transports[-1].proc is not None
            transports[-1].proc.kill()  # the connection breaks under the stream
            wait_for(lambda: not link.connected, what="the break seen")
            link.connect()  # as the Connections service does: follows again from the byte owed
        wait_for(lambda: take() >= n and stream.end is not None, timeout=30.0, what="the end")
    finally:
        link.close(wait=2.0)
    assert got == [f"row {i}" for i in range(n)]  # none lost, none twice, in order
    assert len(transports) == 3


@pytest.mark.slow
@sync
async def test_the_job_view_tail_is_pushed_not_polled(
    gpudeck_home: Path, client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ops: Counter[str] = Counter()
    request = AgentClient.request

    def counting(self: AgentClient, op: str, timeout: float = 30.0, **args: Any) -> Any:
        ops[op] += 1
        return request(self, op, timeout, **args)

    monkeypatch.setattr(AgentClient, "request", counting)
    job = launch(client, workdir, [sys.executable, "-c", COUNTED.format(n=100000, pause=0.1)], name="ticker")
    wait_state(client, job["id"], {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await select_job(pilot, app, job["id"])
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        tail = app.screen.query_one("#output", OutputLog)
        await until(pilot, lambda: tail.line_count >= 3, "the first lines")
        logs_before, first = ops["logs"], int(tail.lines[-1].split()[-1])
        await until(pilot, lambda: int(tail.lines[-1].split()[-1]) >= first + 25, "25 more lines, pushed")
        assert ops["follow"] == 1 and ops["logs"] == logs_before <= 1  # one size probe, no polling

        link = app.connections.links["local"]
        agent = link._client.transport.proc  # type: ignore[union-attr]
        agent.kill()  # the connection breaks; the service reconnects and the stream follows again
        await until(
            pilot, lambda: link.connected and link._client.transport.proc is not agent, "reconnected", 60
        )
        now = int(tail.lines[-1].split()[-1])
        await until(pilot, lambda: int(tail.lines[-1].split()[-1]) >= now + 10, "lines after the reconnect")
        rows = [int(line.split()[-1]) for line in tail.lines if line.startswith("row ")]
        assert rows == list(range(rows[0], rows[0] + len(rows)))  # in order, none lost, none twice
        assert ops["follow"] == 2 and ops["logs"] == logs_before  # followed again from the byte owed
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeckScreen), "back on the deck")
        await until(pilot, lambda: ops["unfollow"] == 1, "the agent told to stop pushing")
