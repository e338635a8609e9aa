"""Issue 33, cheap start: `gpudeck --help`, `--version`, `ps --help` and `ps` of the local host
(an empty home: no host asked over SSH) beside `python -c pass`, the interpreter's own start, in
one run (interleaved rounds, medians, the ratio). `--against DIR` times the same commands from
another checkout (e.g. `git worktree add /tmp/base <commit>`) in the same rounds: the baseline.

    python bench/bench_start.py [--rounds 15] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds): the CPU time (user + sys, from wait4) moves far less with the
    machine's load than the wall time does."""
    start = time.perf_counter()
    # from the empty home: `python -m` puts the cwd first on sys.path, before PYTHONPATH's checkout
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=env.get("GPUDECK_HOME")
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--against", metavar="DIR", help="another checkout, timed in the same rounds")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="bench-start-")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"": here} | ({" (against)": os.path.abspath(args.against)} if args.against else {})
    commands = {"--help": ["--help"], "--version": ["--version"], "ps --help": ["ps", "--help"], "ps": ["ps"]}
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], dict(os.environ))
    }
    for suffix, tree in trees.items():
        env = {**os.environ, "PYTHONPATH": tree, "GPUDECK_HOME": home}
        for name, argv in commands.items():
            cases[f"gpudeck {name}{suffix}"] = ([sys.executable, "-m", "tui", *argv], env)
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, (argv, env) in cases.items():
            w, c = timed(argv, env)
            wall[name].append(w)
            cpu[name].append(c)
    base = statistics.median(wall["python -c pass"])
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {args.rounds} rounds, medians:")
    print(f"  {'':<30} {'wall':>9}  {'ratio':>5}  {'CPU':>9}")
    for name in cases:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"  {name:<30} {w * 1000:6.1f} ms  {w / base:5.1f}x  {c * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
