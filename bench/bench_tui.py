"""The TUI under a busy fleet (issue #17): CPU share, peak RSS and key → screen latency.

A synthetic recording in the `--replay` format (tui/remote/recording.py) is written to a temp dir:
N hosts × 8 GPUs sampled at 1 Hz (hello, then `gpus` answers with util, memory, temperature, power
and uuid), R running jobs that each push M metric points/s through journal events (`tail`), and E
ended jobs (in every `jobs` answer; their journals are five records). The real `GpuDeckApp` then
runs headless (`run_test`) on it through the replay transport at speed 1, in a child process of its
own so CPU and RSS are the app's: CPU share = process time / wall time over a watch window with no
keys pressed, peak RSS = ru_maxrss at the end, and key → screen latency = from a key press until
the screen shows it (the active tab changed, or the job view mounted / the deck back) and the
app is idle again with its refresh done; beside it, the app's CPU time over the same span, which a
loaded machine stretches far less than wall time. The baseline, same run: the same keys on an app replaying
an empty recording (one host, no GPUs, no jobs, nothing flowing), so the figures read as ratios.

    python bench/bench_tui.py                                     # 16 hosts, 8 running, 200 ended
    python bench/bench_tui.py --hosts 64 --running 16 --ended 500 # the issue's full fleet
    python bench/bench_tui.py --profile 25                        # + the top 25 functions (cProfile, event-loop thread)
    python bench/bench_tui.py --ended 500 --running 0 --hosts 1 --against /tmp/base   # CPU watching vs another checkout
    python bench/bench_tui.py --census                            # + messages, refreshes, timers per second
    python bench/bench_tui.py --dense                             # 4 real jobs × 500 lines/s (tui_live.py)
    python bench/bench_tui.py --long 30                           # the same for 30 min: RSS slope
    python bench/bench_tui.py --big                               # a 5 M-point ended job (tui_big.py)

How long it takes is mostly the timed keys: 200 tab switches + 20 job opens at the app's latency
(on the 2-core dev machine the defaults took 3.4 min; `--presses 40 --opens 6` about 1 min).

Goals (issue #17): ≤ 15 % of one core, ≤ 200 MB RSS, key → screen p95 ≤ 50 ms.
Note: the replay transport JSON-encodes each line for the client in the app process; a real SSH
transport spends that time in paramiko instead, so the CPU figure includes a small replay cost.
The parsed recording is frozen out of the garbage collector (gc.freeze) before the app starts.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GPU_NAME = "NVIDIA H100 80GB HBM3"
MEM_TOTAL = 81920
GOALS = {"cpu": 15.0, "rss": 200.0, "p95": 50.0}


# -- the recording ---------------------------------------------------------------------------------


class Tape:
    """Writes recording lines: requests and answers on one connection per host, pushes, in t order."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, int, dict[str, Any]]] = []
        self.ids: dict[str, int] = {}
        self._n = 0

    def add(self, t: float, entry: dict[str, Any]) -> None:
        self._n += 1
        self.lines.append((round(t, 4), self._n, {"t": round(t, 4), **entry}))

    def answer(self, t: float, host: str, op: str, result: Any) -> None:
        rid = self.ids[host] = self.ids.get(host, 0) + 1
        self.add(t, {"host": host, "conn": 1, "dir": "send", "msg": {"id": rid, "op": op}})
        self.add(
            t + 0.001,
            {"host": host, "conn": 1, "dir": "recv", "msg": {"id": rid, "ok": True, "result": result}},
        )

    def push(self, t: float, host: str, job: str, records: list[dict[str, Any]]) -> None:
        self.add(
            t,
            {
                "host": host,
                "conn": 1,
                "dir": "recv",
                "msg": {"push": "events", "job": job, "node": "0", "events": records},
            },
        )

    def write(self, path: Path) -> None:
        self.lines.sort(key=lambda x: (x[0], x[1]))
        with path.open("w", encoding="utf-8") as f:
            f.write(
                json.dumps({"format": "gpudeck-recording", "version": 1, "created_at": time.time()}) + "\n"
            )
            for _, _, entry in self.lines:
                f.write(json.dumps(entry, separators=(",", ":")) + "\n")


def _uuid(h: int, g: int) -> str:
    return f"GPU-{h:08x}-{g:04x}-4444-8888-{h * 8 + g:012x}"


def _hello(host: str, h: int, now: float, gpus: int) -> dict[str, Any]:
    return {
        "hostname": host,
        "os": "Ubuntu 22.04.4 LTS, Linux 5.15.0-105-generic x86_64",
        "python": "3.10.12",
        "cpu_count": 96,
        "ram_total_mib": 1_031_000,
        "logind": {
            "systemd": True,
            "kill_user_processes": False,
            "linger": True,
            "jobs_killed_at_logout": False,
            "advice": None,
        },
        "boot_time": now - 86400 * 9,
        "agent_version": "0.1.0",
        "protocol": 1,
        "time": now,
        "agent_dir": "/home/u/.gpudeck/agent",
        "gpu": {
            "available": gpus > 0,
            "reason": None if gpus else "no NVIDIA driver",
            "driver_version": "550.54.15",
            "cuda_version": "12.4",
            "gpus": [
                {"index": g, "uuid": _uuid(h, g), "name": GPU_NAME, "mem_total_mib": MEM_TOTAL}
                for g in range(gpus)
            ],
        },
    }


def _gpus(h: int, now: float, busy: set[int], rng: random.Random, gpus: int) -> dict[str, Any]:
    out = []
    for g in range(gpus):
        hot = g in busy
        out.append(
            {
                "index": g,
                "uuid": _uuid(h, g),
                "name": GPU_NAME,
                "util": rng.randint(85, 100) if hot else rng.randint(0, 3),
                "mem_used_mib": rng.randint(60_000, 78_000) if hot else 4,
                "mem_total_mib": MEM_TOTAL,
                "temp_c": rng.randint(62, 79) if hot else rng.randint(30, 38),
                "power_w": round(rng.uniform(520, 700) if hot else rng.uniform(60, 75), 1),
                "power_limit_w": 700.0,
                "processes": [{"pid": 4000 + g, "used_mib": 60_000}] if hot else [],
            }
        )
    return {
        "available": gpus > 0,
        "reason": None,
        "gpus": out,
        "time": now,
        "cpu": {"util": round(rng.uniform(20, 60), 1), "load": [12.1, 11.8, 11.0], "count": 96},
        "ram": {"total_mib": 1_031_000, "available_mib": 800_000, "used_mib": 231_000},
    }


def _job(
    jid: str,
    name: str,
    state: str,
    started: float,
    ended: float | None,
    last: dict[str, Any],
    last_seq: int,
    total: int,
) -> dict[str, Any]:
    failed = state == "failed"
    return {
        "id": jid,
        "node": "0",
        "state": state,
        "exit_code": None if ended is None else (1 if failed else 0),
        "signal": None,
        "started_at": started,
        "ended_at": ended,
        "pid": 5000,
        "supervisor_pid": 4999,
        "cause": "CUDA out of memory: lower the batch size" if failed else None,
        "tail": ["torch.OutOfMemoryError: CUDA out of memory."] if failed else None,
        "reason": None,
        "last": last,
        "last_seq": last_seq,
        "name": name,
        "argv": ["python", "-m", "trainer", "--model", name],
        "workdir": "/home/u/work",
        "restart_of": None,
        "created_at": started - 2,
        "grace": 60.0,
        "total_steps": total,
        "price": None,
        "budget": None,
        "idle_stop": None,
    }


def make_recording(
    path: Path,
    hosts: int,
    running: int,
    points: int,
    ended: int,
    seconds: int,
    batch: float = 0.1,
    gpus: int = 8,
) -> int:
    """Write the fleet's recording; returns its size in bytes."""
    rng = random.Random(17)
    tape = Tape()
    now0 = 1_795_000_000.0
    names = [f"h{h:02d}" for h in range(hosts)]
    total = 1_000_000
    run_jobs = [
        (f"20261130-0900{j:02d}-r{j:05x}", f"run-{j:02d}", j % hosts, (j // hosts) % max(gpus, 1))
        for j in range(running)
    ]
    end_jobs = [(f"20261129-{j:06d}-e{j:05x}", f"old-{j:03d}", j % hosts) for j in range(ended)]
    busy: dict[int, set[int]] = {h: set() for h in range(hosts)}
    for _, _, h, g in run_jobs:
        busy[h].add(g)
    for h, host in enumerate(names):
        tape.add(
            0.0,
            {
                "host": host,
                "conn": 1,
                "dir": "recv",
                "msg": {"gpudeck": "agent", "version": "0.1.0", "protocol": 1, "pid": 1000 + h},
            },
        )
        tape.answer(0.001, host, "hello", _hello(host, h, now0, gpus))
    # ended jobs: a short journal each, pushed at t≈0 (what `tail since 0` returns at once)
    ended_objs: dict[int, list[dict[str, Any]]] = {h: [] for h in range(hosts)}
    for jid, name, h in end_jobs:
        start = now0 - 86400 + rng.uniform(0, 80000)
        stop = start + rng.uniform(600, 20000)
        state = "failed" if rng.random() < 0.2 else "exited"
        last = {"step": 5000, "loss": round(rng.uniform(0.1, 0.5), 4), "total_steps": 5000}
        recs = [
            {
                "seq": 1,
                "t": start,
                "kind": "state",
                "state": "starting",
                "supervisor_pid": 4999,
                "agent_version": "0.1.0",
            },
            {"seq": 2, "t": start + 0.1, "kind": "state", "state": "running", "pid": 5000},
            {
                "seq": 3,
                "t": start + 60,
                "kind": "metric",
                "values": {"step": 100, "loss": 1.9, "total_steps": 5000},
            },
            {"seq": 4, "t": stop - 1, "kind": "metric", "values": last},
            {
                "seq": 5,
                "t": stop,
                "kind": "state",
                "state": state,
                "exit_code": 1 if state == "failed" else 0,
                "signal": None,
            },
        ]
        tape.push(0.002, names[h], jid, recs)
        ended_objs[h].append(_job(jid, name, state, start, stop, last, 5, 5000))
    # running jobs: their start, then M metric points/s in pushes every `batch` s, a gpu record each second
    seqs: dict[str, int] = {}
    lasts: dict[str, dict[str, Any]] = {}
    started: dict[str, float] = {}
    for jid, _, h, _g in run_jobs:
        started[jid] = now0 - rng.uniform(600, 7200)
        tape.push(
            0.002,
            names[h],
            jid,
            [
                {
                    "seq": 1,
                    "t": started[jid],
                    "kind": "state",
                    "state": "starting",
                    "supervisor_pid": 4999,
                    "agent_version": "0.1.0",
                },
                {"seq": 2, "t": started[jid] + 0.1, "kind": "state", "state": "running", "pid": 5000},
            ],
        )
        seqs[jid], lasts[jid] = 2, {}
    step = {jid: int(rng.uniform(1000, 5000)) for jid, *_ in run_jobs}
    per_batch = points * batch
    owed = {jid: 0.0 for jid, *_ in run_jobs}
    ticks = int(round(seconds / batch))
    for k in range(1, ticks + 1):
        t = k * batch
        for jid, _, h, g in run_jobs:
            owed[jid] += per_batch
            n, owed[jid] = int(owed[jid]), owed[jid] - int(owed[jid])
            recs = []
            for i in range(n):
                step[jid] += 1
                s = step[jid]
                seqs[jid] += 1
                values = {
                    "step": s,
                    "loss": round(2.5 * 2.718 ** (-s / 20000) + 0.1 + rng.uniform(-0.02, 0.02), 4),
                    "lr": 3e-4,
                    "total_steps": total,
                    "samples_per_s": round(rng.uniform(1900, 2100), 1),
                }
                if s % 500 == 0:
                    values["val_loss"] = round(values["loss"] + 0.05, 4)
                recs.append(
                    {
                        "seq": seqs[jid],
                        "t": now0 + t - batch + (i + 1) * batch / max(n, 1),
                        "kind": "metric",
                        "values": values,
                    }
                )
                lasts[jid] = values
            if abs(t - round(t)) < 1e-9:
                seqs[jid] += 1
                recs.append(
                    {
                        "seq": seqs[jid],
                        "t": now0 + t,
                        "kind": "gpu",
                        "gpus": [
                            {
                                "uuid": _uuid(h, g),
                                "index": g,
                                "util": rng.randint(88, 100),
                                "mem_used_mib": 71000,
                                "mem_total_mib": MEM_TOTAL,
                                "temp_c": rng.randint(65, 78),
                                "power_w": round(rng.uniform(550, 700), 1),
                            }
                        ],
                    }
                )
            if recs:
                tape.push(t, names[h], jid, recs)
    # polls: gpus and jobs answered every second (the app polls gpus at 1 Hz, jobs every 2 s)
    for sec in range(seconds + 1):
        for h, host in enumerate(names):
            tape.answer(sec + 0.01, host, "gpus", _gpus(h, now0 + sec, busy[h], rng, gpus))
            mine = [
                _job(jid, name, "running", started[jid], None, lasts[jid], seqs[jid], total)
                for jid, name, hh, _ in run_jobs
                if hh == h
            ]
            tape.answer(sec + 0.02, host, "jobs", {"jobs": mine + ended_objs[h]})
    tape.write(path)
    return path.stat().st_size


def make_empty(path: Path) -> int:
    tape = Tape()
    tape.add(
        0.0,
        {
            "host": "h00",
            "conn": 1,
            "dir": "recv",
            "msg": {"gpudeck": "agent", "version": "0.1.0", "protocol": 1},
        },
    )
    tape.answer(0.001, "h00", "hello", _hello("h00", 0, 1_795_000_000.0, 0))
    tape.answer(0.01, "h00", "gpus", _gpus(0, 1_795_000_000.0, set(), random.Random(0), 0))
    tape.answer(0.02, "h00", "jobs", {"jobs": []})
    tape.write(path)
    return path.stat().st_size


# -- one app run (the child process) ---------------------------------------------------------------


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _thread_cpu() -> dict[str, float]:
    """CPU seconds per live thread of this process, by thread name (Linux /proc; empty elsewhere)."""
    import threading

    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for tid, name in names.items():
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        key = "app (event loop)" if name == "MainThread" else name.rstrip("0123456789-_ ")
        out[key] = out.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))] if xs else float("nan")


async def _until(pilot: Any, cond: Any, timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        await pilot.pause(0)
    return True


class Screen:
    """Sees each frame the app writes (App._display) and when the first one showing a wanted
    change went out: the key → screen latency is up to that frame, not to when a test helper
    thinks the app is idle (Pilot.press waits for the process's CPU to go quiet)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.cond: Any = None
        self.shown: float | None = None
        self.shown_cpu = 0.0  # process time when that frame went out
        self.cpu: list[float] = []  # per press: process seconds from the key to its frame
        self.frames = 0
        inner = app._display

        def display(screen: Any, renderable: Any) -> None:
            inner(screen, renderable)
            self.frames += 1
            if self.cond is not None and self.shown is None and screen is app.screen and self.cond():
                self.shown = time.perf_counter()
                self.shown_cpu = time.process_time()

        app._display = display

    async def press(self, key: str, cond: Any, timeout: float = 10.0) -> float:
        """Seconds from the key reaching the app (as a terminal's would) to the first frame that shows cond."""
        from textual import events

        self.cond, self.shown = cond, None
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(self.app)
        t0, c0 = time.perf_counter(), time.process_time()
        self.app._driver.send_message(event)
        while self.shown is None:
            if time.perf_counter() - t0 > timeout:
                raise SystemExit(f"bench_tui: pressing {key!r} never showed on the screen")
            await asyncio.sleep(0.001)
        self.cond = None
        self.cpu.append(self.shown_cpu - c0)
        return self.shown - t0


class Census:
    """Counts, per second of the watch window, what the app's loop handles: messages posted by
    class (a thread worker shows as three StateChanged), widget refreshes by widget class, and
    Textual timers started (each one a task)."""

    def __init__(self) -> None:
        from textual.message_pump import MessagePump
        from textual.timer import Timer
        from textual.widget import Widget

        self.on = False
        self.counts: dict[str, int] = {}
        census = self

        def counted(cls: Any, name: str, label: Any) -> None:
            inner = getattr(cls, name)

            def wrapper(this: Any, *a: Any, **kw: Any) -> Any:
                if census.on:
                    key = label(this, a)
                    census.counts[key] = census.counts.get(key, 0) + 1
                return inner(this, *a, **kw)

            setattr(cls, name, wrapper)

        counted(MessagePump, "post_message", lambda _s, a: f"message {type(a[0]).__name__}")
        counted(Widget, "refresh", lambda w, _a: f"refresh {type(w).__name__}")
        counted(Timer, "_start", lambda _s, _a: "timer started")
        counted(Widget, "_render", lambda w, _a: f"render {type(w).__name__}")  # a repaint's content

    def per_second(self, seconds: float) -> dict[str, float]:
        return {k: v / seconds for k, v in sorted(self.counts.items(), key=lambda kv: -kv[1])}


async def _run(path: Path, args: argparse.Namespace, loaded: bool) -> dict[str, Any]:
    from textual.widgets import TabbedContent

    from tui.app import GpuDeckApp
    from tui.remote.replay import Recording
    from tui.screens.deck import DeckScreen
    from tui.screens.job import JobScreen
    from tui.widgets.jobs_table import JobsTable

    rec = Recording.load(path)
    # The parsed recording (~250,000 objects at 64 hosts) is the bench's, not the app's: an SSH
    # session holds none of it. Frozen out of the GC, so full collections cost what they would
    # cost the app (they took ~0.3 s of CPU each, landing in random key presses).
    gc.freeze()
    rss_loaded = _rss_mib()
    app = GpuDeckApp(hosts=rec.hosts, transport=lambda h: rec.transport(h, speed=1), store=None)
    out: dict[str, Any] = {"rss_recording": rss_loaded}
    prof = cProfile.Profile() if args.profile and loaded else None
    census = Census() if args.census else None
    async with app.run_test(size=(160, 48)) as pilot:
        wall0, cpu0 = time.monotonic(), time.process_time()
        ok = await _until(
            pilot,
            lambda: (
                all(h.up and (h.gpus or not loaded) for h in app.fleet.hosts.values())
                and len(app.fleet.jobs) >= (args.running + args.ended if loaded else 0)
            ),
            60.0,
        )
        out["startup_s"] = time.monotonic() - wall0
        out["startup_ok"] = ok
        if prof:
            prof.enable()
        await pilot.pause(1.0)
        w0, c0, t0, l0 = time.monotonic(), time.process_time(), _thread_cpu(), time.thread_time()
        if census:
            census.on = True
        await pilot.pause(args.watch)
        out["cpu_watch"] = 100 * (time.process_time() - c0) / (time.monotonic() - w0)
        out["cpu_watch_loop"] = (
            100 * (time.thread_time() - l0) / (time.monotonic() - w0)
        )  # the event loop's thread
        t1, span = _thread_cpu(), time.monotonic() - w0
        # Where the watching CPU goes, per thread (threads of one name summed), % of a core.
        out["cpu_threads"] = {k: round(100 * (v - t0.get(k, 0.0)) / span, 2) for k, v in t1.items()}
        if census:
            census.on = False
            out["census"] = census.per_second(span)
        tabs = app.screen.query_one(TabbedContent)
        screen = Screen(app)
        lat: list[float] = []
        for i in range(args.presses):
            key, want = ("2", "jobs") if i % 2 == 0 else ("1", "fleet")
            lat.append(await screen.press(key, lambda w=want: tabs.active == w))
            await pilot.pause(args.gap)  # a user's pace between keys; data keeps flowing
        out["tabs"] = lat
        out["tabs_cpu"] = list(screen.cpu)
        if tabs.active != "jobs":
            await screen.press("2", lambda: tabs.active == "jobs")
        table = app.screen.query_one(JobsTable)
        opens: list[float] = []
        backs: list[float] = []
        if loaded and table.row_count:
            table.focus()
            await pilot.pause()
            for _ in range(args.opens):
                opens.append(await screen.press("enter", lambda: isinstance(app.screen, JobScreen)))
                await pilot.pause(0.1)  # the job view on screen for a moment, as a user would look
                backs.append(await screen.press("escape", lambda: isinstance(app.screen, DeckScreen)))
        out["opens"], out["backs"] = opens, backs
        out["opens_cpu"], out["backs_cpu"] = (
            screen.cpu[-2 * len(opens) :: 2] if opens else [],
            screen.cpu[-2 * len(opens) + 1 :: 2] if opens else [],
        )
        if prof:
            prof.disable()
        out["cpu_run"] = 100 * (time.process_time() - cpu0) / (time.monotonic() - wall0)
        out["run_s"] = time.monotonic() - wall0
        out["jobs"] = len(app.fleet.jobs)
        out["points"] = (
            sum(
                len(s)
                for j in app.fleet.jobs.values()
                for n in j.nodes.values()
                for s in getattr(n, "series", {}).values()
            )
            if loaded
            else 0
        )
    out["rss"] = _rss_mib()
    if prof:
        s = io.StringIO()
        stats = pstats.Stats(prof, stream=s).sort_stats("cumulative")
        stats.print_stats(args.profile)
        s.write("gpudeck's own functions (tui/) only:\n")
        stats.print_stats(r"[/\\]tui[/\\]", args.profile)
        s.write("by own time:\n")
        stats.sort_stats("tottime").print_stats(args.profile)
        out["profile"] = s.getvalue()
    return out


def child(args: argparse.Namespace) -> None:
    home = tempfile.mkdtemp(prefix="gpudeck-bench-home-")
    os.environ["GPUDECK_HOME"] = home  # no user config, no state.db
    res = asyncio.run(_run(Path(args.child), args, args.loaded))
    print("BENCH_RESULT " + json.dumps(res))


# -- the parent: generate, run both, print ---------------------------------------------------------


def _spawn(path: Path, args: argparse.Namespace, loaded: bool, root: Path = ROOT) -> dict[str, Any]:
    """One app run in a child process; `root`: the checkout whose code (and this bench file) runs."""
    cmd = (
        [
            sys.executable,
            str(root / "bench" / Path(__file__).name),
            "--child",
            str(path),
            "--watch",
            str(args.watch),
            "--presses",
            str(args.presses),
            "--opens",
            str(args.opens),
            "--gap",
            str(args.gap),
            "--running",
            str(args.running),
            "--ended",
            str(args.ended),
            "--profile",
            str(args.profile),
        ]
        + (["--loaded"] if loaded else [])
        + (["--census"] if args.census else [])
    )
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    for line in p.stdout.splitlines():
        if line.startswith("BENCH_RESULT "):
            return json.loads(line[len("BENCH_RESULT ") :])
    raise SystemExit(
        f"bench_tui: the app run failed (rc {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    )


def against(fleet: Path, args: argparse.Namespace) -> None:
    """The watching CPU of this checkout and another on one recording, runs alternating (a busy
    moment of a shared machine hits both), medians, split per thread (the other checkout runs this
    bench file: copy it there)."""
    import statistics

    args.presses, args.opens = 0, 0
    runs: dict[str, list[dict[str, Any]]] = {"this": [], "other": []}
    for i in range(args.rounds):
        order = [("this", ROOT), ("other", args.against.resolve())]
        for name, root in order if i % 2 == 0 else order[::-1]:
            runs[name].append(_spawn(fleet, args, loaded=True, root=root))
    for name, outs in runs.items():
        threads = sorted({k for o in outs for k in o.get("cpu_threads", {})})
        split = ", ".join(
            f"{k} {statistics.median(o.get('cpu_threads', {}).get(k, 0.0) for o in outs):.2f} %"
            for k in threads
        )
        each = ", ".join(f"{o['cpu_watch']:.2f}" for o in outs)
        print(
            f"{name} ({ROOT if name == 'this' else args.against}): CPU watching, median of {len(outs)}: "
            f"{statistics.median(o['cpu_watch'] for o in outs):.2f} % (runs: {each}); per thread: {split}"
        )


def _ms(xs: list[float]) -> str:
    return f"{_pct(xs, 0.5) * 1000:.1f} / {_pct(xs, 0.95) * 1000:.1f} ms" if xs else "—"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--running", type=int, default=8)
    ap.add_argument("--points", type=int, default=50, help="metric points/s per running job")
    ap.add_argument("--ended", type=int, default=200)
    ap.add_argument("--seconds", type=int, default=30, help="length of the recording")
    ap.add_argument(
        "--watch", type=float, default=8.0, help="seconds of no keys over which the CPU share is taken"
    )
    ap.add_argument("--presses", type=int, default=200, help="tab switches (2/1) timed")
    ap.add_argument("--opens", type=int, default=20, help="enter into a job and escape back, timed")
    ap.add_argument("--gap", type=float, default=0.05, help="seconds between timed keys")
    ap.add_argument("--profile", type=int, default=0, help="print the top N functions by cumulative time")
    ap.add_argument(
        "--against",
        type=Path,
        help="another checkout (e.g. `git archive` of main): only the watching "
        "CPU, the fleet run alternately from it and from this one, --rounds times each; medians",
    )
    ap.add_argument("--rounds", type=int, default=5, help="with --against: runs of each")
    ap.add_argument(
        "--census", action="store_true", help="count messages, refreshes, renders, timers per second"
    )
    ap.add_argument("--dense", action="store_true", help="real local jobs printing fast (tui_live.py)")
    ap.add_argument("--long", type=float, metavar="MINUTES", help="dense jobs for MINUTES: the RSS slope")
    ap.add_argument("--big", action="store_true", help="a home with a 5 M-point ended job (tui_big.py)")
    ap.add_argument("--jobs", type=int, default=4, help="--dense/--long: jobs")
    ap.add_argument("--rate", type=int, default=500, help="--dense/--long: lines/s per job")
    ap.add_argument("--big-points", type=int, default=5_000_000, help="--big: the job's points")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--loaded", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dense or args.long or args.big:
        sys.path.insert(0, str(Path(__file__).parent))
        if args.big:
            import tui_big

            tui_big.main(args)
        else:
            import tui_live

            tui_live.main(args)
        return
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="gpudeck-bench-tui-") as tmp:
        fleet, empty = Path(tmp) / "fleet.jsonl", Path(tmp) / "empty.jsonl"
        t0 = time.monotonic()
        size = make_recording(fleet, args.hosts, args.running, args.points, args.ended, args.seconds)
        make_empty(empty)
        if args.against:
            against(fleet, args)
            return
        print(
            f"recording: {args.hosts} hosts × 8 GPUs at 1 Hz, {args.running} running × {args.points} points/s, "
            f"{args.ended} ended, {args.seconds} s: {size / 1e6:.1f} MB, written in {time.monotonic() - t0:.1f} s"
        )
        base = _spawn(empty, args, loaded=False)
        load = _spawn(fleet, args, loaded=True)
    if not load["startup_ok"]:
        print(
            f"warning: the fleet had not fully arrived after {load['startup_s']:.0f} s ({load['jobs']} jobs)"
        )
    rows = [
        (
            "CPU, watching (no keys), % of a core",
            f"{load['cpu_watch']:.1f} %",
            f"{base['cpu_watch']:.1f} %",
            f"≤ {GOALS['cpu']:.0f} %",
            load["cpu_watch"] <= GOALS["cpu"],
        ),
        (
            "  of which the event loop's thread (the rest: readers, polls, replay)",
            f"{load.get('cpu_watch_loop', float('nan')):.1f} %",
            f"{base.get('cpu_watch_loop', float('nan')):.1f} %",
            "—",
            None,
        ),
        (
            "CPU, whole run incl. keys, % of a core",
            f"{load['cpu_run']:.1f} %",
            f"{base['cpu_run']:.1f} %",
            "—",
            None,
        ),
        (
            "peak RSS",
            f"{load['rss']:.0f} MiB",
            f"{base['rss']:.0f} MiB",
            f"≤ {GOALS['rss']:.0f} MB",
            load["rss"] * 1.048576 <= GOALS["rss"],
        ),
        (
            "  of which the loaded recording (before the app)",
            f"{load['rss_recording']:.0f} MiB",
            f"{base['rss_recording']:.0f} MiB",
            "—",
            None,
        ),
        (
            f"key → screen, tab switch ×{args.presses}, p50 / p95",
            _ms(load["tabs"]),
            _ms(base["tabs"]),
            f"p95 ≤ {GOALS['p95']:.0f} ms",
            _pct(load["tabs"], 0.95) * 1000 <= GOALS["p95"],
        ),
        (
            "  CPU time of the app per tab switch, p50 / p95 (steady under load)",
            _ms(load["tabs_cpu"]),
            _ms(base["tabs_cpu"]),
            "—",
            None,
        ),
        (
            f"key → screen, enter into a job ×{len(load['opens'])}, p50 / p95",
            _ms(load["opens"]),
            "—",
            f"p95 ≤ {GOALS['p95']:.0f} ms",
            _pct(load["opens"], 0.95) * 1000 <= GOALS["p95"] if load["opens"] else None,
        ),
        (
            "  CPU time of the app per enter / escape, p50",
            f"{_pct(load['opens_cpu'], 0.5) * 1000:.1f} / {_pct(load['backs_cpu'], 0.5) * 1000:.1f} ms"
            if load["opens"]
            else "—",
            "—",
            "—",
            None,
        ),
        (
            f"key → screen, escape back ×{len(load['backs'])}, p50 / p95",
            _ms(load["backs"]),
            "—",
            f"p95 ≤ {GOALS['p95']:.0f} ms",
            _pct(load["backs"], 0.95) * 1000 <= GOALS["p95"] if load["backs"] else None,
        ),
    ]
    w = max(len(r[0]) for r in rows)
    print(f"\n{'':{w}}  {'fleet':>16}  {'empty (baseline)':>16}  {'goal':>12}")
    for name, a, b, goal, met in rows:
        mark = "" if met is None else ("  met" if met else "  MISSED")
        print(f"{name:{w}}  {a:>16}  {b:>16}  {goal:>12}{mark}")
    print(
        f"\nratios fleet/empty: CPU watching {load['cpu_watch'] / max(base['cpu_watch'], 0.01):.1f}×, "
        f"RSS {load['rss'] / base['rss']:.2f}×, tab p50 {_pct(load['tabs'], 0.5) / _pct(base['tabs'], 0.5):.2f}×, "
        f"tab p95 {_pct(load['tabs'], 0.95) / _pct(base['tabs'], 0.95):.2f}×"
    )
    print(
        f"fleet: {load['jobs']} jobs in the app, up in {load['startup_s']:.1f} s, run {load['run_s']:.0f} s "
        f"(empty: {base['run_s']:.0f} s)"
    )
    split = ", ".join(
        f"{k} {v:.1f} %" for k, v in sorted(load.get("cpu_threads", {}).items(), key=lambda kv: -kv[1])
    )
    print(f"fleet CPU watching, per thread: {split or '—'}")
    if load.get("census"):
        print("\nper second while watching (fleet):")
        for k, v in load["census"].items():
            if v >= 0.5:
                print(f"  {v:8.1f}  {k}")
    if load.get("profile"):
        print("\n" + load["profile"])


if __name__ == "__main__":
    main()
