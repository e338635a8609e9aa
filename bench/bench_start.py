"""Issue 33, cheap start: `gpudeck --help` and `gpudeck --version` beside `python -c pass`, the
interpreter's own start, in one run (interleaved rounds, medians, the ratio). No host is asked.

    python bench/bench_start.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    rounds = ap.parse_args().rounds
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "gpudeck --help": [sys.executable, "-m", "tui", "--help"],
        "gpudeck --version": [sys.executable, "-m", "tui", "--version"],
        "gpudeck ps --help": [sys.executable, "-m", "tui", "ps", "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, argv in cases.items():
            times[name].append(timed(argv))
    base = statistics.median(times["python -c pass"])
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {rounds} rounds, medians:")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<20} {med * 1000:7.1f} ms  {med / base:5.1f}x")


if __name__ == "__main__":
    main()
