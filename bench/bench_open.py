"""Opening a long ended job in the TUI (issues 13/17): from `enter` to the first frame whose loss
chart spans the whole run, and the app's peak RSS, before vs after in the same run.

A job of N metric points is written into a throwaway GPUDECK_HOME as its supervisor writes it
(bench_reading.make_job); the real app runs headless (`run_test`) against the real local agent,
in a child process per round so RSS is that round's. The job is older than the 20 ended jobs the
app replays at start (TAIL_FINISHED = 0 here), as most of a long history is.

- before: the job view replays the journal (`tail` from 0) and the chart grows as it is applied
  (the `series` op switched off in the child);
- fresh: no fold cached when the app starts (the first `jobs` poll has the agent fold every job
  ahead, `warm_series`; an open before it is done waits for that fold);
- warm: the fold is cached beside the journal (every later open, and any after the warming).

With --against CHECKOUT (another tree of gpudeck, e.g. `git archive main | tar -x -C DIR`) each
mode is also run with that tree's app and agent, interleaved round by round on the same job: before
and after in one run. --modes picks the modes (the `before` replay takes a minute at 1 M points).

    python bench/bench_open.py [--points 1000000] [--rounds 2] [--timeout 180] [--modes fresh,warm] [--against DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
JOB = "20260101-000000-b16b16"


async def _open(points: int, mode: str, timeout: float) -> dict[str, Any]:
    from textual import events

    from tui.app import GpuDeckApp
    from tui.screens.job import JobScreen
    from tui.services import tails
    from tui.widgets.charts import LossChart

    tails.TAIL_FINISHED = 0
    if mode == "before":
        tails.Tails._load_series = lambda self, job_id, node, host: None  # type: ignore[method-assign]
    shown: list[float] = []
    real_x = LossChart._x

    def seen(self: LossChart, job: Any, name: str, pts: list[tuple[float, float]]) -> Any:
        if name == "loss" and pts and pts[-1][0] >= 0.95 * points and not shown:
            shown.append(time.perf_counter())
        return real_x(self, job, name, pts)

    LossChart._x = seen  # type: ignore[method-assign]
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        while JOB not in app.fleet.jobs or not app.fleet.jobs[JOB].nodes.get("0"):
            await pilot.pause(0.05)
        await pilot.press("2")
        await pilot.pause(0.5)
        # The key goes in as a terminal's would: Pilot.press waits for the app to go idle, which a
        # journal replay (before) never lets it do until the end.
        key = events.Key("enter", None)
        key.set_sender(app)
        t0 = time.perf_counter()
        app._driver.send_message(key)
        while not shown and time.perf_counter() - t0 < timeout:
            await asyncio.sleep(0.01)
        opened = isinstance(app.screen, JobScreen)
        result = {
            "seconds": shown[0] - t0 if shown else None,
            "opened": opened,
            "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
        # Out at once: an app still taking in a million records takes minutes to wind down.
        print("BENCH_RESULT " + json.dumps(result), flush=True)
        os._exit(0)
    return result


def _round(home: Path, points: int, mode: str, timeout: float, tree: Path = ROOT) -> dict[str, Any]:
    if mode != "warm":
        (home / "local-agent" / "jobs" / JOB / "0" / "series.cache.json").unlink(missing_ok=True)
    env = dict(
        os.environ, GPUDECK_HOME=str(home), PYTHONPATH=str(tree)
    )  # the app's and its local agent's code
    p = subprocess.run(
        [
            sys.executable,
            str(tree / "bench" / "bench_open.py"),
            "--child",
            mode,
            "--points",
            str(points),
            "--timeout",
            str(timeout),
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=str(home),
    )
    for line in p.stdout.splitlines():
        if line.startswith("BENCH_RESULT "):
            return json.loads(line[len("BENCH_RESULT ") :])
    raise SystemExit(
        f"bench_open: the {mode} round failed (rc {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=180.0, help="give up on a round after this many seconds")
    ap.add_argument("--modes", default="before,fresh,warm", help="comma-separated: before, fresh, warm")
    ap.add_argument("--against", type=Path, help="another gpudeck tree to open the job with, round by round")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        asyncio.run(_open(args.points, args.child, args.timeout))  # prints its result and exits
        return
    from bench_reading import make_job

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp, "home")
        make_job(home / "local-agent", JOB, "big", args.points, tmp)
        trees = {"": ROOT} | ({" (against)": args.against.resolve()} if args.against else {})
        runs = [(mode + tag, mode, tree) for mode in args.modes.split(",") for tag, tree in trees.items()]
        got: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in runs}
        for _ in range(args.rounds):  # interleaved, so the machine's load falls on every mode alike
            for name, mode, tree in runs:
                got[name].append(_round(home, args.points, mode, args.timeout, tree))
    print(
        f"open a {args.points:,}-point ended job: enter → first frame whose loss chart spans the run (95 %+ of its steps) "
        f"(median of {args.rounds}; peak RSS)"
    )
    med = {}
    for mode, rounds in got.items():
        secs = [r["seconds"] for r in rounds if r["seconds"] is not None]
        med[mode] = statistics.median(secs) if len(secs) == len(rounds) else None
        shown = f"{med[mode]:.2f} s" if med[mode] is not None else f"> {args.timeout:.0f} s (not drawn)"
        print(f"  {mode:16}  {shown:>24}   RSS {statistics.median(r['rss_mib'] for r in rounds):.0f} MiB")
    if med.get("before") and med.get("fresh") and med.get("warm"):
        print(
            f"  before/after: {med['before'] / med['fresh']:.1f}x (fresh), {med['before'] / med['warm']:.1f}x (warm)"
        )
    for mode in ("fresh", "warm"):
        if med.get(mode) and med.get(mode + " (against)"):
            print(f"  {mode}: this tree / against: {med[mode] / med[mode + ' (against)']:.2f}x")


if __name__ == "__main__":
    main()
