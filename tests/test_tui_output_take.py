"""The job view's output tail under a dense stream (issue 36): lines pushed in hundreds of small
chunks are written to the log in a few takes a second, every line once and in order."""

from __future__ import annotations

import base64
import time
from typing import Any

from textual.app import App, ComposeResult

from tests.support.tui import sync, until
from tui.widgets.output_log import TAKE_GAP, OutputLog

JOB = "20261206-000000-0a7b0c"


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield OutputLog(None, None, JOB, "0", tail_bytes=0)


@sync
async def test_hundreds_of_pushes_are_a_few_takes_with_every_line() -> None:
    app = One()
    async with app.run_test() as pilot:
        log = app.query_one(OutputLog)
        takes: list[int] = []
        real_take = log.stream.take

        def counted_take() -> list[str]:
            lines = real_take()
            takes.append(len(lines))
            return lines

        log.stream.take = counted_take  # type: ignore[method-assign]
        log.stream.start_at(0)
        offset, pushes, started = 0, 100, time.monotonic()
        for i in range(pushes):  # a chunk per loop turn, as a reader thread hands them over
            data = f"step {i} loss {1 / (i + 1):.4f}\n".encode()
            log.stream.take_push(
                {"push": "output", "offset": offset, "data": base64.b64encode(data).decode()}
            )
            offset += len(data)
            await pilot.pause(0.005)
        elapsed = time.monotonic() - started
        await until(pilot, lambda: sum(takes) == pushes, "every line taken", timeout=60)
        # At most one take per TAKE_GAP of the time the pushes took (a loaded machine allows more),
        # and the last one after them: not one per push.
        assert len(takes) <= elapsed / TAKE_GAP + 2, (len(takes), elapsed)
        lines = [str(line) for line in log.lines]
        assert lines[-pushes:] == [f"step {i} loss {1 / (i + 1):.4f}" for i in range(pushes)]


@sync
async def test_a_dense_stream_starts_no_textual_timer(monkeypatch: Any) -> None:
    """The takes are scheduled as plain loop callbacks: a Textual Timer is a task and its messages,
    four times a second for as long as a job view is open (issue 36, round two)."""
    from textual.timer import Timer

    started: list[Timer] = []
    real_start = Timer._start

    def counted(timer: Timer) -> None:
        started.append(timer)
        real_start(timer)

    app = One()
    async with app.run_test() as pilot:
        log = app.query_one(OutputLog)
        log.stream.start_at(0)
        await pilot.pause()
        monkeypatch.setattr(Timer, "_start", counted)
        offset, pushes = 0, 40
        for i in range(pushes):
            data = f"line {i}\n".encode()
            log.stream.take_push(
                {"push": "output", "offset": offset, "data": base64.b64encode(data).decode()}
            )
            offset += len(data)
            await pilot.pause(0.01)
        await until(pilot, lambda: len(log.lines) >= pushes, "every line written", timeout=60)
        assert [str(line) for line in log.lines][-pushes:] == [f"line {i}" for i in range(pushes)]
        assert started == []


@sync
async def test_more_lines_move_the_scrollbar_without_laying_out_the_screen() -> None:
    """Issue 36: the log's height is the screen's to give, so a followed dense job must not relay
    the whole job view at each take (it did 4 times a second); a scrollbar coming still does."""
    app = One()
    async with app.run_test(size=(80, 20)) as pilot:
        log = app.query_one(OutputLog)
        log.write_lines([f"line {i}" for i in range(5)])
        await pilot.pause()
        layouts: list[bool] = []
        real_refresh = log.refresh

        def spied(*args: Any, **kwargs: Any) -> Any:
            layouts.append(bool(kwargs.get("layout")))
            return real_refresh(*args, **kwargs)

        log.refresh = spied  # type: ignore[method-assign]
        log.write_lines([f"line {i}" for i in range(5, 100)])  # now taller than the screen
        await pilot.pause()
        assert any(layouts)  # the scrollbar came: laid out once
        layouts.clear()
        for n in range(100, 200, 10):
            log.write_lines([f"line {i}" for i in range(n, n + 10)])
        await pilot.pause()
        assert not any(layouts), "a longer log relaid the screen"
        assert log.vertical_scrollbar.window_virtual_size == log.virtual_size.height >= 200
        assert log.is_vertical_scroll_end  # still following the end
