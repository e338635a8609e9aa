"""The full log (`l`) over a 200 MB output.log: opens on its last line with line numbers, line 1 is
one `g` away (no line cap), the agent's search finds a line in the middle, and the keys move. The
end shows before the index is built, and printed text is never markup."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.tui import select_job, sync, until
from tui.app import GpuDeckApp
from tui.live.logfile import LogFile
from tui.remote.client import AgentClient
from tui.screens.logs import LogScreen
from tui.widgets.virtual_log import VirtualLog

LINES = 2_000_000  # × 100 bytes: 200 MB
NEEDLE_AT = 1_000_000


def line(i: int) -> bytes:
    body = b"the needle in the middle" if i == NEEDLE_AT else b"step=%d loss=0.%06d" % (i, i)
    return (b"line %09d " % i + body).ljust(99, b".") + b"\n"


def big_output(agent_dir: Path, job_id: str) -> Path:
    """The job's output.log replaced by 200 MB of numbered lines (as if it had printed them)."""
    path = agent_dir / "jobs" / job_id / "0" / "output.log"
    with path.open("wb") as f:
        for start in range(0, LINES, 100_000):
            f.write(b"".join(line(i) for i in range(start, start + 100_000)))
    assert path.stat().st_size == LINES * 100
    return path


def row_text(log: VirtualLog, y: int) -> str:
    return log.render_line(y).text


@pytest.mark.slow
@sync
async def test_a_200_mb_log_opens_at_its_end_and_finds_the_middle(
    gpudeck_home: Path, agent_dir: Path, client: AgentClient, workdir: Path
) -> None:
    job = launch(client, workdir, [sys.executable, "-c", "print('short')"], name="big")
    wait_state(client, job["id"], {"exited"})
    path = big_output(agent_dir, job["id"])
    try:
        app = GpuDeckApp(store=None)
        async with app.run_test(size=(100, 30)) as pilot:
            await select_job(pilot, app, job["id"])
            await pilot.press("l")
            await until(pilot, lambda: isinstance(app.screen, LogScreen), "the full log")
            log = app.screen.query_one(VirtualLog)
            last = line(LINES - 1).decode().rstrip("\n")
            await until(pilot, lambda: log.text_of(LINES - 1) == last, "the last line", timeout=60)
            await pilot.pause()
            assert log.total == LINES
            bottom = log.size.height - 1
            assert row_text(log, bottom).startswith(f"{LINES} line 001999999")  # numbered, from 1
            title = str(app.screen.query_one("#log-title").render())
            assert f"{LINES:,} lines" in title

            await pilot.press("g")  # no cap: the first line is there
            await until(pilot, lambda: log.text_of(0) is not None and log.top == 0, "line 1")
            assert row_text(log, 0).startswith("      1 line 000000000 step=0")
            await pilot.press("pagedown")
            await until(pilot, lambda: log.top > 0, "a page down")
            page = log.top
            await pilot.press("j")
            await until(pilot, lambda: log.top == page + 1, "a line down")
            await pilot.press("k", "pageup")
            await until(pilot, lambda: log.top == 0, "back up")

            await pilot.press("slash", *"NEEDLE", "enter")  # case-insensitive, found by the agent
            await until(
                pilot, lambda: log.match is not None and log.match.line == NEEDLE_AT, "the match", timeout=60
            )
            await until(pilot, lambda: log.text_of(NEEDLE_AT) is not None, "the matched line read")
            assert "the needle in the middle" in (log.text_of(NEEDLE_AT) or "")
            assert log.top <= NEEDLE_AT < log.top + log.size.height
            title = str(app.screen.query_one("#log-title").render())
            assert f"/NEEDLE: line {NEEDLE_AT + 1}" in title and "ended (exited)" in title  # no "following"
            await pilot.press("n")  # the only match: wrapping finds it again
            await until(
                pilot, lambda: "searching" not in str(app.screen.query_one("#log-title").render()), "n"
            )
            assert log.match is not None and log.match.line == NEEDLE_AT

            await pilot.press("G")  # the end, following again
            await until(pilot, lambda: log.follow and log.top == LINES - log.size.height, "the end")
    finally:
        path.unlink()


@pytest.mark.slow
@sync
async def test_the_end_shows_before_the_index_and_output_is_never_markup(
    gpudeck_home: Path, client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    printed = (
        "for i in range(500): print(f'row {i}')\nprint('[bold red]not markup[/] \\x1b[31mred\\x1b[0m \\x07')"
    )
    job = launch(client, workdir, [sys.executable, "-c", printed], name="small")
    wait_state(client, job["id"], {"exited"})
    release = threading.Event()
    refresh_index = LogFile.refresh_index

    def held(self: LogFile) -> bool:  # the index is slow to come (a huge file)
        release.wait(30)
        return refresh_index(self)

    monkeypatch.setattr(LogFile, "refresh_index", held)
    app = GpuDeckApp(store=None)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await select_job(pilot, app, job["id"])
            await pilot.press("l")
            await until(pilot, lambda: isinstance(app.screen, LogScreen), "the full log")
            log = app.screen.query_one(VirtualLog)
            last = "[bold red]not markup[/] red \ufffd"  # as printed, colours dropped, the bell marked
            await until(
                pilot, lambda: log.total and log.text_of(log.total - 1) == last, "the end, before the index"
            )
            assert not log.ready and "indexing" in str(app.screen.query_one("#log-title").render())
            await pilot.pause()
            assert row_text(log, log.size.height - 1) == f"· {last}".ljust(log.size.width)
            release.set()
            await until(pilot, lambda: log.ready and log.total == 501, "numbered")
            await until(
                pilot,
                lambda: row_text(log, log.size.height - 1).startswith(f"501 {last}"),
                "the last row numbered",
            )
    finally:
        release.set()


@pytest.mark.slow
@sync
async def test_the_full_log_of_a_running_job_follows_its_new_lines(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    ticks = "import time\nfor i in range(100000):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.05)\n"
    job = launch(client, workdir, [sys.executable, "-c", ticks], name="ticking")
    wait_state(client, job["id"], {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await select_job(pilot, app, job["id"])
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, LogScreen), "the full log")
        log = app.screen.query_one(VirtualLog)

        def last_tick() -> int:
            text = log.text_of(log.total - 1) if log.ready and log.total else None
            return int(text.split()[-1]) if text and text.startswith("tick ") else -1

        await until(pilot, lambda: last_tick() >= 0, "the first index")
        first = last_tick()
        await until(pilot, lambda: last_tick() >= first + 30, "new lines, followed to the end")
        assert log.follow and log.top == max(0, log.total - log.size.height)
        assert "● following" in str(app.screen.query_one("#log-title").render())
        await pilot.press("k")  # reading back: the view stays where it is while lines come
        await until(
            pilot, lambda: "○ not following" in str(app.screen.query_one("#log-title").render()), "paused"
        )
        top, total = log.top, log.total
        await until(pilot, lambda: log.total >= total + 20, "more lines indexed")
        assert log.top == top
