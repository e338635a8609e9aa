"""`gpudeck ps` over many unreachable hosts, this tree beside a baseline, in the same run (#25, finding 19).

Every host's target is 127.0.0.1 on a closed port, so each one fails at once: what is left is
gpudeck's own work per host. It was quadratic (hosts.toml parsed by tomlkit once per host);
parsed once per command with tomllib it must stay under 3 s for 300 hosts.

    python bench/bench_ps_hosts.py [--hosts 300] [--baseline main] [--runs 2]

The baseline is `git archive REF` unpacked in a temporary directory and run the same way.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def closed_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_home(home: Path, hosts: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    port = closed_port()
    (home / "hosts.toml").write_text(
        "".join(
            f'[hosts.h{i}]  # unreachable on purpose\ntarget = "127.0.0.1:{port}"\nprice_per_hour = 1.5\n\n'
            for i in range(hosts)
        )
    )


def time_ps(tree: Path, home: Path, runs: int) -> tuple[float, int]:
    """The best wall time of `runs` runs of `python -m tui ps` from `tree`, and its exit code."""
    env = {**os.environ, "PYTHONPATH": str(tree), "GPUDECK_HOME": str(home)}
    best, code = float("inf"), 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tui", "ps"], env=env, cwd=tree, capture_output=True, timeout=600
        )
        best, code = min(best, time.perf_counter() - start), done.returncode
    return best, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--baseline", default="main", help="git ref to compare with (default: main)")
    parser.add_argument("--runs", type=int, default=2, help="best of this many runs each (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ps-hosts-") as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.baseline], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        home = Path(tmp) / "home"
        make_home(home, args.hosts)
        ours, our_code = time_ps(ROOT, home, args.runs)
        theirs, their_code = time_ps(base, home, args.runs)
    print(f"ps over {args.hosts} unreachable hosts (best of {args.runs}):")
    print(f"  this tree        {ours:7.2f} s  (exit {our_code})")
    print(f"  {args.baseline:<16} {theirs:7.2f} s  (exit {their_code})")
    print(f"  target < 3 s: {'met' if ours < 3 else 'NOT met'}")


if __name__ == "__main__":
    main()
