"""What the wide layout (issue #17, 220×60) costs, without UI or transport: the fleet model taking
an 8-GPU `gpus` sample (it now also keeps each GPU's memory/power/temperature trail), and a host
panel's lines drawn narrow (156 cells) and wide (216 cells, four sparklines per GPU). Median of
rounds; CPU time. Run it against the code before with the same file, side by side:

    python bench/bench_wide.py                               # this tree
    PYTHONPATH=/path/to/other/tree python bench/bench_wide.py --root /path/to/other/tree

The bench_tui fleet (64 hosts × 8 GPUs at 1 Hz) takes 64 samples a second.
"""

from __future__ import annotations

import argparse
import inspect
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--samples", type=int, default=5000)
parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent), help="the tree to measure")
ARGS = parser.parse_args()
sys.path.insert(0, ARGS.root)

from tui.fleet import Fleet  # noqa: E402
from tui.widgets.host_panel import host_lines  # noqa: E402


def sample(rng: random.Random) -> dict[str, Any]:
    return {
        "available": True,
        "gpus": [
            {
                "index": g,
                "uuid": f"GPU-{g}",
                "name": "NVIDIA H100 80GB HBM3",
                "util": rng.randint(0, 100),
                "mem_used_mib": rng.randint(1000, 80000),
                "mem_total_mib": 81559,
                "temp_c": rng.randint(30, 90),
                "power_w": rng.uniform(70, 720),
                "power_limit_w": 700.0,
                "processes": [{"pid": 41200 + g, "user": "ml", "mem_mib": 70112}],
            }
            for g in range(8)
        ],
    }


def intake(seed: int) -> tuple[float, Fleet]:
    """CPU seconds per sample, and the fleet it filled."""
    rng, fleet = random.Random(seed), Fleet(clock=lambda: 0.0)
    fleet.set_host_status("box", "connected")
    samples = [sample(rng) for _ in range(ARGS.samples)]
    start = time.process_time()
    for i, s in enumerate(samples):
        fleet.apply_gpus("box", s, t=float(i))
    return (time.process_time() - start) / len(samples), fleet


def draw(fleet: Fleet, width: int, wide: bool) -> float:
    host, kwargs = fleet.hosts["box"], {"wide": True} if wide else {}
    start = time.process_time()
    for _ in range(200):
        host_lines(host, fleet, 0.0, width, **kwargs)
    return (time.process_time() - start) / 200


def main() -> None:
    has_wide = "wide" in inspect.signature(host_lines).parameters
    rows: dict[str, list[float]] = {"gpus sample taken (8 GPUs)": [], "panel drawn, 156 cells": []}
    if has_wide:
        rows["panel drawn wide, 216 cells"] = []
    for r in range(ARGS.rounds):
        per_sample, fleet = intake(r)
        rows["gpus sample taken (8 GPUs)"].append(per_sample)
        rows["panel drawn, 156 cells"].append(draw(fleet, 156, False))
        if has_wide:
            rows["panel drawn wide, 216 cells"].append(draw(fleet, 216, True))
    print(f"tree: {ARGS.root}  (median of {ARGS.rounds} rounds, CPU time)")
    for name, values in rows.items():
        print(f"  {name:<30} {statistics.median(values) * 1e6:8.1f} µs")


if __name__ == "__main__":
    main()
