"""bench_tui's real-job modes (issue 36): the TUI on a home whose `local` agent runs real jobs.

`--dense`: 4 local jobs each printing 500 JSON loss lines a second (a python loop, launched with
`gpudeck run` like any job). The app runs headless in a child process: its CPU on the jobs tab and
in one job's view, the local agent's `serve` (the app's child) beside it, tab-switch p50/p90; the
empty app (a home with no job) is the baseline in the same run.
`--long MINUTES`: the same jobs, the app on the jobs tab for MINUTES, RSS sampled every 10 s, the
slope (MiB/min, least squares over the second half: the start-up's growth is not a leak).
`--big` lives in tui_big.py. With `--census` (or `--profile N`) each watch also prints, on stderr,
what the app's loop handled per second (messages, refreshes, renders by class) or its profile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

DENSE = """\
import json, sys, time
step, t0 = 0, time.monotonic()
while True:
    step += 1
    print(json.dumps({"step": step, "loss": 2.0 / step + (step % 7) * 1e-3, "total_steps": 10**9}))
    if step % 50 == 0:  # 500 lines/s: a 0.1 s deadline per 50 lines
        sys.stdout.flush()
        time.sleep(max(0.0, t0 + step / RATE - time.monotonic()))
"""


def make_home(tmp: Path, name: str) -> dict[str, str]:
    """A private GPUDECK_HOME and HOME (a quiet login profile: jobs run under `bash -l`)."""
    home, user = tmp / name / "gpudeck", tmp / name / "user"
    home.mkdir(parents=True)
    user.mkdir(parents=True)
    (user / ".profile").write_text("")
    return {**os.environ, "GPUDECK_HOME": str(home), "HOME": str(user), "PYTHONPATH": str(ROOT)}


def start_dense_jobs(env: dict[str, str], tmp: Path, jobs: int, rate: int) -> list[str]:
    script = tmp / "dense.py"
    script.write_text(f"RATE = {rate}\n" + DENSE)
    ids = []
    for i in range(jobs):
        p = subprocess.run(
            [sys.executable, "-m", "tui", "run", "--name", f"dense-{i}", "--workdir", str(tmp), "--",
             sys.executable, str(script)],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        ids.append(p.stdout.strip().split()[-1])
    return ids


def stop_jobs(env: dict[str, str], ids: list[str]) -> None:
    for job in ids:
        subprocess.run([sys.executable, "-m", "tui", "kill", job], env=env, capture_output=True)


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def rss_now(field: str = "VmRSS") -> float:
    """Current RSS in MiB (VmHWM: the peak; unlike ru_maxrss, not inherited from the parent's fork)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Meter:
    """CPU % of a core of this process and of its children (the agent) over a window."""

    def __init__(self) -> None:
        self.t0, self.c0 = time.monotonic(), time.process_time()
        self.kids = {p: proc_cpu(p) for p in children(os.getpid())}

    def read(self) -> tuple[float, float]:
        span = time.monotonic() - self.t0
        agent = sum(proc_cpu(p) - c for p, c in self.kids.items())
        return 100 * (time.process_time() - self.c0) / span, 100 * agent / span


async def run_app(args: argparse.Namespace, loaded: bool) -> dict[str, Any]:
    from bench_tui import Screen, _until
    from textual.widgets import TabbedContent

    from tui.app import GpuDeckApp
    from tui.screens.job import JobScreen
    from tui.widgets.jobs_table import JobsTable

    out: dict[str, Any] = {}
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        t0 = time.monotonic()
        want = args.jobs if loaded else 0
        ok = await _until(pilot, lambda: sum(j.active for j in app.fleet.jobs.values()) >= want, 60.0)
        out["startup_s"], out["startup_ok"] = time.monotonic() - t0, ok
        screen = Screen(app)
        tabs = app.screen.query_one(TabbedContent)
        await screen.press("2", lambda: tabs.active == "jobs")
        await pilot.pause(2.0)  # the tails caught up
        if args.long:
            out["rss_samples"] = await sample_rss(pilot, args.long)
            return out
        out["cpu_jobs"], out["agent_jobs"], out["threads_jobs"] = await watch(pilot, args, "jobs tab")
        lat = []
        for i in range(args.presses):
            key, tab = ("1", "fleet") if i % 2 == 0 else ("2", "jobs")
            lat.append(await screen.press(key, lambda w=tab: tabs.active == w))
            await pilot.pause(args.gap)
        out["tabs"] = lat
        if loaded:
            table = app.screen.query_one(JobsTable)
            table.focus()
            await pilot.pause()
            await screen.press("enter", lambda: isinstance(app.screen, JobScreen))
            await pilot.pause(2.0)
            out["cpu_view"], out["agent_view"], out["threads_view"] = await watch(pilot, args, "job view")
        out["rss"] = rss_now()
    return out


async def watch(pilot: Any, args: argparse.Namespace, what: str) -> tuple[float, float, dict[str, float]]:
    """CPU of the app and of the agent over `args.watch` s of no keys; per app thread; a profile
    of the event loop's thread on stderr with --profile N."""
    import cProfile
    import io
    import pstats

    from bench_tui import Census, _thread_cpu

    prof = cProfile.Profile() if args.profile else None
    census = Census() if args.census else None
    if census:
        census.on = True
    meter, t0 = Meter(), _thread_cpu()
    if prof:
        prof.enable()
    await pilot.pause(args.watch)
    if prof:
        prof.disable()
    cpu, agent = meter.read()
    span = time.monotonic() - meter.t0
    threads = {k: round(100 * (v - t0.get(k, 0.0)) / span, 1) for k, v in _thread_cpu().items()}
    if census:
        census.on = False
        counts = ", ".join(f"{k} {v:.1f}" for k, v in census.per_second(span).items() if v >= 0.5)
        print(f"== {what}: per second: {counts}", file=sys.stderr)
    if prof:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(args.profile)
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(args.profile)
        print(f"== {what}: by own time, then cumulative\n{s.getvalue()}", file=sys.stderr)
    return cpu, agent, threads


async def sample_rss(pilot: Any, minutes: float) -> list[tuple[float, float]]:
    samples, t0 = [], time.monotonic()
    while time.monotonic() - t0 < minutes * 60:
        samples.append((time.monotonic() - t0, rss_now()))
        await pilot.pause(10.0)
    samples.append((time.monotonic() - t0, rss_now()))
    return samples


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    res = asyncio.run(run_app(args, args.loaded))
    print("BENCH_RESULT " + json.dumps(res))


def spawn(env: dict[str, str], args: argparse.Namespace, loaded: bool, mode: str) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).parent / "bench_tui.py"), mode, *([str(args.long)] if args.long else []),
           "--child", "live", "--watch", str(args.watch), "--presses", str(args.presses), "--gap", str(args.gap),
           "--jobs", str(args.jobs), "--profile", str(args.profile)] + (["--loaded"] if loaded else [])  # fmt: skip
    cmd += ["--census"] if args.census else []
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if (args.profile or args.census) and loaded:
        print(p.stderr[-20000:])
    for line in p.stdout.splitlines():
        if line.startswith("BENCH_RESULT "):
            return dict(json.loads(line[len("BENCH_RESULT ") :]))
    raise SystemExit(
        f"bench_tui: the app run failed (rc {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    )


def slope(samples: list[tuple[float, float]]) -> float:
    """MiB per minute, least squares over the second half of the samples."""
    half = samples[len(samples) // 2 :]
    if len(half) < 2:
        return float("nan")
    n = len(half)
    mx, my = sum(t for t, _ in half) / n, sum(r for _, r in half) / n
    var = sum((t - mx) ** 2 for t, _ in half)
    return 60 * sum((t - mx) * (r - my) for t, r in half) / var if var else float("nan")


def main(args: argparse.Namespace) -> None:
    from bench_tui import _pct

    if args.child:
        child(args)
        return
    tmp = Path(tempfile.mkdtemp(prefix="gpudeck-bench-live-"))
    busy, empty = make_home(tmp, "dense"), make_home(tmp, "empty")
    ids = start_dense_jobs(busy, tmp, args.jobs, args.rate)
    try:
        mode = "--long" if args.long else "--dense"
        if args.long:
            res = spawn(busy, args, True, mode)
            s = res["rss_samples"]
            first, last = s[0][1], s[-1][1]
            print(f"{args.jobs} jobs × {args.rate} lines/s, jobs tab, {args.long} min: RSS {first:.0f} → {last:.0f} MiB "
                  f"(max {max(r for _, r in s):.0f}), slope over the second half {slope(s):+.2f} MiB/min")  # fmt: skip
            print("samples (s, MiB): " + ", ".join(f"{t:.0f}:{r:.0f}" for t, r in s))
            return
        base = spawn(empty, args, False, mode)
        load = spawn(busy, args, True, mode)
        print(f"{args.jobs} real local jobs × {args.rate} lines/s (empty app beside it, same run)\n")
        rows = [
            ("TUI CPU, jobs tab, % of a core", f"{load['cpu_jobs']:.1f} %", f"{base['cpu_jobs']:.1f} %", "≤ 8 %"),
            ("  agent (serve) CPU beside it", f"{load['agent_jobs']:.1f} %", f"{base['agent_jobs']:.1f} %", "—"),
            ("TUI CPU, one job's view", f"{load['cpu_view']:.1f} %", "—", "≤ 15 %"),
            ("  agent (serve) CPU beside it", f"{load['agent_view']:.1f} %", "—", "—"),
            ("tab switch p50 / p90", f"{_pct(load['tabs'], .5) * 1e3:.0f} / {_pct(load['tabs'], .9) * 1e3:.0f} ms",
             f"{_pct(base['tabs'], .5) * 1e3:.0f} / {_pct(base['tabs'], .9) * 1e3:.0f} ms", "near empty"),
            ("RSS at the end", f"{load['rss']:.0f} MiB", f"{base['rss']:.0f} MiB", "—"),
        ]  # fmt: skip
        for key in ("threads_jobs", "threads_view"):
            print(
                f"{key}: "
                + ", ".join(f"{k} {v} %" for k, v in sorted(load[key].items(), key=lambda kv: -kv[1]))
            )
        print(f"{'':34}  {'dense':>14}  {'empty':>14}  {'goal':>10}")
        for name, a, b, goal in rows:
            print(f"{name:34}  {a:>14}  {b:>14}  {goal:>10}")
    finally:
        stop_jobs(busy, ids)
        shutil.rmtree(tmp, ignore_errors=True)
