"""Where the event path's time goes: cProfile in every thread of every process of one flood.

The pipeline is three processes (the job's supervisor parses output and writes the journal; serve
tails it; the client decodes pushes). A throwaway `sitecustomize` on PYTHONPATH gives each thread
of each Python process its own cProfile and dumps them at exit (also through `os._exit`); this
script then prints, per busy thread, how much of its wall time it spent waiting and the functions
with the most cumulative time. Profiling slows the pipeline (~35 %); read shares, not rates.

    python bench/profile_pipeline.py [--lines 50000] [--top 15]
"""

from __future__ import annotations

import argparse
import glob
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WAITS = ("acquire", "select", "readline", "sleep", "waitpid", "'get' of '_queue")

SHIM = r"""
import os
if os.environ.get("GPUDECK_PROFILE_DIR"):
    import atexit, cProfile, sys, threading
    _dir, _profs, _lock, _done = os.environ["GPUDECK_PROFILE_DIR"], [], threading.Lock(), []
    def _new():
        p = cProfile.Profile()
        with _lock:
            _profs.append((threading.current_thread().name, p))
        return p
    _new().enable()
    _run = threading.Thread.run
    def run(self):
        p = _new(); p.enable()
        try:
            _run(self)
        finally:
            p.disable()
    threading.Thread.run = run
    def _dump():
        if _done:
            return
        _done.append(1)
        role = next((a for a in sys.argv[1:3] if a in ("serve", "run")), "client" if "profile_pipeline" in sys.argv[0] else "job")
        with _lock:
            for i, (name, p) in enumerate(_profs):
                p.disable()
                p.dump_stats(os.path.join(_dir, "%s.%d.%s.%d.prof" % (role, os.getpid(), name.replace("/", "_"), i)))
    atexit.register(_dump)
    _exit = os._exit
    def _exit_dumped(code):
        _dump(); _exit(code)
    os._exit = _exit_dumped
"""


def flood(n: int) -> None:
    """The child run under the shim: one flood of n metric lines through the local pipeline."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_agent import pipeline_events_per_s

    from tui.remote.client import AgentClient
    from tui.remote.transport import LocalTransport

    with tempfile.TemporaryDirectory() as tmp:
        client = AgentClient(LocalTransport(Path(tmp) / "agent"))
        client.connect()
        try:
            print(f"{pipeline_events_per_s(client, tmp, n):,.0f} events/s (under the profiler)")
        finally:
            client.close()
        deadline = time.monotonic() + 30
        while _processes_naming(tmp) and time.monotonic() < deadline:
            time.sleep(0.05)  # the supervisor writes its profile when it exits


def _processes_naming(text: str) -> list[int]:
    found = []
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            if text.encode() in Path(cmdline).read_bytes():
                found.append(int(cmdline.split("/")[2]))
        except OSError:
            continue
    return found


def report(out: Path, top: int) -> None:
    idle = []
    for path in sorted(glob.glob(str(out / "*.prof"))):
        stats = pstats.Stats(path)
        wall = stats.total_tt
        waiting = sum(
            tt for (_, _, fn), (_, _, tt, _, _) in stats.stats.items() if any(w in fn for w in WAITS)
        )
        role, pid, thread = Path(path).name.split(".")[:3]
        if wall < 0.2 or wall - waiting < 0.05 * wall:
            if wall >= 0.2:
                idle.append(f"{role}/{thread} {100 * waiting / wall:.0f} %")
            continue  # idle threads say nothing more
        print(
            f"\n== {role} (pid {pid}) thread {thread}: {wall:.2f} s profiled, {100 * waiting / wall:.0f} % waiting"
        )
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][3])
        shown = 0
        for (file, line, fn), (_, calls, tt, ct, _) in rows:
            if "threading.py" in file or shown >= top:
                continue
            shown += 1
            where = "/".join(Path(file).parts[-2:]) if file != "~" else ""
            print(
                f"  {100 * ct / wall:5.1f} % cum {100 * tt / wall:5.1f} % own {calls:8d}  {where}:{line} {fn}"
            )
    print("\nwaiting most of the time: " + ", ".join(idle))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=50_000)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--flood", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.flood:
        flood(args.flood)
        return
    with tempfile.TemporaryDirectory() as tmp:
        site, out = Path(tmp) / "site", Path(tmp) / "out"
        site.mkdir()
        out.mkdir()
        (site / "sitecustomize.py").write_text(SHIM)
        env = dict(
            os.environ,
            GPUDECK_PROFILE_DIR=str(out),
            PYTHONPATH=os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        )
        subprocess.run([sys.executable, __file__, "--flood", str(args.lines)], env=env, check=True)
        report(out, args.top)


if __name__ == "__main__":
    main()
