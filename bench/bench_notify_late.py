"""What the user's side's [notify] share costs a listing (issue 35): `gpudeck ps --all` over N
ended jobs with no [notify], beside the same with an apprise target (form://, every end already
told: the ledger's claim answers no) and with host_unreachable watched, in the same run,
alternating; medians of wall time per CLI run.

    python bench/bench_notify_late.py [--jobs 50] [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {
    "no [notify]": "",
    "form:// target": '[notify]\nurls = ["form://127.0.0.1:9/x"]\nevents = ["failed", "ended"]\n',
    "+ host_unreachable": '[notify]\nurls = ["form://127.0.0.1:9/x"]\nevents = ["failed", "ended", "host_unreachable"]\n',
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = dict(os.environ, GPUDECK_HOME=str(home), HOME=str(home), PYTHONPATH=str(ROOT))
        cli = [sys.executable, "-m", "tui"]
        for _ in range(args.jobs):
            subprocess.run([*cli, "run", "--", "true"], env=env, cwd=tmp, check=True, capture_output=True)
        subprocess.run([*cli, "ps", "--all"], env=env, cwd=tmp, check=True, capture_output=True)
        times: dict[str, list[float]] = {name: [] for name in CONFIGS}
        for _ in range(args.rounds):
            for name, text in CONFIGS.items():
                (home / "config.toml").write_text(text)
                t0 = time.perf_counter()
                subprocess.run([*cli, "ps", "--all"], env=env, cwd=tmp, check=True, capture_output=True)
                times[name].append(time.perf_counter() - t0)
        base = statistics.median(times["no [notify]"])
        for name, got in times.items():
            med = statistics.median(got)
            print(
                f"{name:20s} ps --all over {args.jobs} jobs: {med * 1000:7.1f} ms median ({med / base:.2f}x)"
            )


if __name__ == "__main__":
    main()
