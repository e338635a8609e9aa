"""bench_tui's `--big` mode (issue 36, finding 6): a home whose only job ended after 5 M points,
written as today's agent writes it (tests/support/long_job.py: JournalWriter `points` lines).

The app runs headless in a child process; figures: time from start until the job is listed with
its cost and a tab key is answered ("usable"), RSS then and after 10 s more, and the same for the
job's view opened (the agent's downsampled series drawn). The empty app is the baseline, same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tui_live import make_home, rss_now

ROOT = Path(__file__).resolve().parent.parent
JOB = "20261206-000000-b16b16"


async def run_app(loaded: bool) -> dict[str, Any]:
    from bench_tui import Screen, _until
    from textual.widgets import TabbedContent

    from tui.app import GpuDeckApp
    from tui.screens.job import JobScreen
    from tui.widgets.jobs_table import JobsTable

    out: dict[str, Any] = {}
    t0 = time.monotonic()
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:

        def listed() -> bool:
            cost = app.fleet.costs.jobs.get(JOB)
            return not loaded or (cost is not None and cost.accrued is not None)

        out["listed_ok"] = await _until(pilot, listed, 600.0)
        screen = Screen(app)
        tabs = app.screen.query_one(TabbedContent)
        await screen.press("2", lambda: tabs.active == "jobs", timeout=600)
        out["usable_s"] = time.monotonic() - t0
        out["rss_usable"] = rss_now()
        await pilot.pause(10.0)
        out["rss_settled"] = rss_now()
        if loaded:
            table = app.screen.query_one(JobsTable)
            table.focus()
            await pilot.pause()
            t1 = time.monotonic()
            await screen.press("enter", lambda: isinstance(app.screen, JobScreen))
            job = app.fleet.jobs[JOB]
            out["drawn_ok"] = await _until(pilot, lambda: "loss" in job.series, 600.0)
            out["view_s"] = time.monotonic() - t1
            await pilot.pause(5.0)
            out["rss_view"] = rss_now()
            out["points_held"] = sum(len(s) for s in job.series.values())
        out["rss_peak"] = rss_now("VmHWM")
    return out


def child(args: argparse.Namespace) -> None:
    res = asyncio.run(run_app(args.loaded))
    print("BENCH_RESULT " + json.dumps(res))


def spawn(env: dict[str, str], loaded: bool) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).parent / "bench_tui.py"), "--big", "--child", "big"]
    p = subprocess.run(cmd + (["--loaded"] if loaded else []), env=env, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("BENCH_RESULT "):
            return dict(json.loads(line[len("BENCH_RESULT ") :]))
    raise SystemExit(
        f"bench_tui: the app run failed (rc {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    )


def warm(agent_dir: Path) -> tuple[float, float]:
    """The agent folds the journal once, as the polls of whoever watched the job run did: its job
    object's fold and its series' fold are cached beside the journal (seconds each: `jobs`, `series`)."""
    from tui.remote.client import AgentClient
    from tui.remote.transport import LocalTransport

    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    try:
        t0 = time.monotonic()
        client.request("jobs", timeout=3600)
        t1 = time.monotonic()
        client.request("series", timeout=3600, job=JOB, node="0", width=2000)
        return t1 - t0, time.monotonic() - t1
    finally:
        client.close()


def main(args: argparse.Namespace) -> None:
    if args.child:
        child(args)
        return
    sys.path.insert(0, str(ROOT))
    from tests.support.long_job import write_ended_job

    tmp = Path(tempfile.mkdtemp(prefix="gpudeck-bench-big-"))
    try:
        big, empty = make_home(tmp, "big"), make_home(tmp, "empty")
        (Path(big["GPUDECK_HOME"]) / "hosts.toml").write_text("[hosts.local]\nprice_per_hour = 2.0\n")
        t0 = time.monotonic()
        directory = write_ended_job(
            Path(big["GPUDECK_HOME"]) / "local-agent", JOB, "big", args.big_points, spike_at=7
        )
        size = (directory / "events.jsonl").stat().st_size
        print(f"an ended job of {args.big_points:,} points: journal {size / 2**20:.0f} MiB, written in "
              f"{time.monotonic() - t0:.0f} s")  # fmt: skip
        cold = warm(Path(big["GPUDECK_HOME"]) / "local-agent")
        print(f"the agent's first fold of it (once; a running job's polls fold it as it grows): `jobs` "
              f"{cold[0]:.1f} s, `series` {cold[1]:.1f} s")  # fmt: skip
        base, load = spawn(empty, False), spawn(big, True)
        rows = [
            ("usable (listed with its cost, `2` answered)", f"{load['usable_s']:.2f} s", f"{base['usable_s']:.2f} s", "≤ 2 s"),
            ("RSS when usable", f"{load['rss_usable']:.0f} MiB", f"{base['rss_usable']:.0f} MiB", "≤ 150 MB"),
            ("RSS 10 s later", f"{load['rss_settled']:.0f} MiB", f"{base['rss_settled']:.0f} MiB", "≤ 150 MB"),
            ("its view: enter → series drawn", f"{load['view_s']:.2f} s", "—", "—"),
            ("RSS with its view open", f"{load['rss_view']:.0f} MiB", "—", "—"),
            ("peak RSS", f"{load['rss_peak']:.0f} MiB", f"{base['rss_peak']:.0f} MiB", "—"),
        ]  # fmt: skip
        print(f"\n{'':44}  {'5 M-point job':>14}  {'empty':>10}  {'goal':>9}")
        for name, a, b, goal in rows:
            print(f"{name:44}  {a:>14}  {b:>10}  {goal:>9}")
        print(f"points held in its series: {load['points_held']:,}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
