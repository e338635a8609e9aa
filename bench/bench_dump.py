"""How long one node's dump takes (issue 34), by route, side by side in one run: N Python processes
(opted in to the faulthandler route, each spinning in a named function) dumped by py-spy one
process at a time (the baseline), by py-spy on all at once (what take.py does, SPY_AT_ONCE), then by
the faulthandler route, REPS times each; medians. The faulthandler route's floor is its settle wait
(stacks/faultroute.py SETTLED: a file that stopped growing for 0.2 s is complete).

    python bench/bench_dump.py [--processes 4] [--reps 5]
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
sys.path.insert(0, str(ROOT))

from remote_agent.stacks import faultroute, pyspy, take  # noqa: E402

SPIN = (
    "from trainer.stacks import register\nassert register()\nprint('ready', flush=True)\n"
    "def spin_here():\n    while True:\n        sum(range(1000))\nspin_here()\n"
)


def timed(node_dir: Path, pids: list[int], reps: int, route: str) -> list[float]:
    if route == "faulthandler":
        os.environ[pyspy.PY_SPY_VAR] = "off"
    else:
        os.environ.pop(pyspy.PY_SPY_VAR, None)  # found on PATH or beside this python
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        record = take.take_dump(node_dir, "bench", "0", pids)
        times.append(time.perf_counter() - start)
        routes = {s["route"] for s in record["stacks"]}
        assert record["counts"]["stacks"] == len(pids) and routes == {route}, record["unreached"]
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    if pyspy.find() is None:
        print("py-spy is not on PATH nor beside this python: pip install py-spy", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        node_dir = Path(tmp)
        stacks = faultroute.make_stacks_dir(node_dir)
        env = {**os.environ, faultroute.STACKS_VAR: str(stacks), "PYTHONPATH": str(ROOT)}
        procs = [
            subprocess.Popen([sys.executable, "-c", SPIN], env=env, stdout=subprocess.PIPE)
            for _ in range(args.processes)
        ]
        try:
            for p in procs:
                assert p.stdout is not None and p.stdout.readline() == b"ready\n"
            pids = [p.pid for p in procs]
            print(
                f"{args.processes} spinning Python processes, {args.reps} dumps per route (seconds per dump)"
            )
            at_once = take.SPY_AT_ONCE
            for label, route, spies in (
                ("py-spy, one at a time", "py-spy", 1),
                ("py-spy, all at once", "py-spy", at_once),
                ("faulthandler", "faulthandler", at_once),
            ):
                take.SPY_AT_ONCE = spies
                times = timed(node_dir, pids, args.reps, route)
                print(
                    f"  {label:22s} median {statistics.median(times):.3f}  min {min(times):.3f}  max {max(times):.3f}"
                )
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
