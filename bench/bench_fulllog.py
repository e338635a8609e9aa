"""Opening the full log (`l`) of a job whose output.log is 200 MB: key → its last line on screen.

The real app, headless (Textual's run_test), on the local agent; the job's output.log is replaced
by --mb MB of 100-byte numbered lines. Each round presses `l` on the job and waits until the
screen's log holds the file's last line, and then (the virtual log) until its lines are numbered
(the index built), then `esc`. Medians over --rounds. Run it on this tree
and on an older one (`PYTHONPATH=OLD python OLD/bench/bench_fulllog.py`, copying this file there)
to compare: it drives either widget (the virtual log's `text_of`, or the old Log's `lines`).

    python bench/bench_fulllog.py [--mb 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("PYTHONPATH") or str(Path(__file__).resolve().parent.parent))

from tests.support.cleanup import kill_all_jobs  # noqa: E402
from tests.support.jobs import launch, wait_state  # noqa: E402
from tui.remote.client import AgentClient  # noqa: E402
from tui.remote.transport import LocalTransport  # noqa: E402


def line(i: int) -> bytes:
    return (b"line %09d step=%d loss=0.%06d" % (i, i, i % 1_000_000)).ljust(99, b".") + b"\n"


def shows_last(widget: object, last: str) -> bool:
    text_of = getattr(widget, "text_of", None)
    if text_of is not None:  # the virtual log
        total = widget.total  # type: ignore[attr-defined]
        return total > 0 and text_of(total - 1) == last
    lines = widget.lines  # type: ignore[attr-defined]  # the old Log
    return bool(lines) and lines[-1] == last


async def rounds(job_id: str, last: str, n: int) -> list[tuple[float, float]]:
    from tui.app import GpuDeckApp
    from tui.widgets.jobs_table import JobsTable

    app = GpuDeckApp(store=None)
    times: list[tuple[float, float]] = []
    opened: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        while job_id not in app.fleet.jobs:
            await pilot.pause(0.05)
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        while table.selected_id != job_id:
            await pilot.pause(0.05)
        deck = app.screen
        for _ in range(n):
            t0 = time.perf_counter()
            await pilot.press("l")
            while app.screen is deck:
                await pilot.pause(0.005)
            opened.append(time.perf_counter() - t0)
            while app.screen is deck or not shows_last(app.screen.query_one("#full-log"), last):
                await pilot.pause(0.005)
            shown = time.perf_counter() - t0
            log = app.screen.query_one("#full-log")
            while not getattr(log, "ready", True):  # the virtual log: until the line numbers are there
                await pilot.pause(0.005)
            times.append((shown, time.perf_counter() - t0))
            await pilot.press("escape")
            while app.screen is not deck:
                await pilot.pause(0.02)
    print(f"screen pushed: median {statistics.median(opened) * 1000:.0f} ms")
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        os.environ["GPUDECK_HOME"] = str(home)
        agent_dir = home / "local-agent"
        work = Path(tmp) / "work"
        work.mkdir()
        client = AgentClient(LocalTransport(agent_dir))
        client.connect()
        try:
            job = launch(client, work, [sys.executable, "-c", "print('short')"], name="big")
            wait_state(client, job["id"], {"exited"})
            lines = args.mb * 10_000
            out = agent_dir / "jobs" / job["id"] / "0" / "output.log"
            with out.open("wb") as f:
                for start in range(0, lines, 100_000):
                    f.write(b"".join(line(i) for i in range(start, min(lines, start + 100_000))))
            last = line(lines - 1).decode().rstrip("\n")
            times = asyncio.run(rounds(job["id"], last, args.rounds))
        finally:
            client.close()
            kill_all_jobs(agent_dir)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    shown, numbered = ([t[k] * 1000 for t in times] for k in (0, 1))
    print(
        f"full log of {args.mb} MB ({lines:,} lines), median of {len(times)} opens (min-max): key → last line "
        f"shown {statistics.median(shown):.0f} ms ({min(shown):.0f}-{max(shown):.0f}); → numbered "
        f"{statistics.median(numbered):.0f} ms ({min(numbered):.0f}-{max(numbered):.0f}); peak RSS {rss:.0f} MiB"
    )
    if len(times) > 1:  # the first open scans the file; later ones find the agent's index of it
        print(
            f"first open: shown {shown[0]:.0f} ms, numbered {numbered[0]:.0f} ms; reopens, median: shown "
            f"{statistics.median(shown[1:]):.0f} ms, numbered {statistics.median(numbered[1:]):.0f} ms"
        )


if __name__ == "__main__":
    main()
