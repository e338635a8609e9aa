"""The fleet model's own cost of taking in metric records (issue #17), without UI or transport:
16 running jobs, batches of 5 metric records (step, loss, lr, total_steps, samples_per_s), applied
with Fleet.apply_events as the app's drain does. Median of rounds; CPU time, not wall time.

    python bench/bench_fleet_intake.py                 # 5 rounds of 15,000 records
    python bench/bench_fleet_intake.py --rounds 9

The bench_tui fleet (64 hosts, 16 running jobs × 50 points/s) sends 800 records/s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tui.fleet import Fleet  # noqa: E402

JOBS, PER_BATCH, BATCHES, RATE = 16, 5, 3000, 800


def one_round(seed: int) -> float:
    """CPU seconds per record for one fresh fleet."""
    fleet, rng = Fleet(), random.Random(seed)
    jobs = [f"20261130-0900{j:02d}-r{j:05x}" for j in range(JOBS)]
    seq = dict.fromkeys(jobs, 2)
    step = dict.fromkeys(jobs, 1000)
    for j in jobs:
        fleet.apply_events(
            "h00",
            j,
            "0",
            [
                {"seq": 1, "t": 1.0, "kind": "state", "state": "starting"},
                {"seq": 2, "t": 1.1, "kind": "state", "state": "running", "pid": 5},
            ],
        )
    batches: list[tuple[str, list[dict[str, Any]]]] = []
    for b in range(BATCHES):
        j = jobs[b % JOBS]
        recs = []
        for i in range(PER_BATCH):
            seq[j] += 1
            step[j] += 1
            recs.append(
                {
                    "seq": seq[j],
                    "t": 2.0 + b * 0.01 + i * 0.001,
                    "kind": "metric",
                    "values": {
                        "step": step[j],
                        "loss": rng.random(),
                        "lr": 3e-4,
                        "total_steps": 10**6,
                        "samples_per_s": 2000.0,
                    },
                }
            )
        batches.append((j, recs))
    t0 = time.process_time()
    for j, recs in batches:
        fleet.apply_events("h00", j, "0", recs)
    return (time.process_time() - t0) / (BATCHES * PER_BATCH)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    per = statistics.median(one_round(r) for r in range(args.rounds))
    print(
        f"fleet model: {per * 1e6:.1f} µs of CPU per metric record (median of {args.rounds}); "
        f"at {RATE} records/s: {per * RATE * 100:.2f} % of a core"
    )


if __name__ == "__main__":
    main()
