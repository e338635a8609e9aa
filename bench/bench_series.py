"""How long one chart redraw takes for a week-long job: Series vs keeping every point.

Both sides get the same points (a noisy falling loss, one per second for a week, with one spike)
and use the same min/max downsampling; the naive baseline keeps every point and downsamples the
full list. Each timed round is what a live chart does: one new point arrives, then a redraw.

    python bench/bench_series.py [--points 604800] [--width 200] [--rounds 51]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tui.fleet.series import Series, minmax_downsample  # noqa: E402


class Naive:
    """Every point kept, the whole list downsampled on each redraw."""

    def __init__(self) -> None:
        self.xs, self.ys = array("d"), array("d")

    def add(self, x: float, y: float) -> None:
        self.xs.append(x)
        self.ys.append(y)

    def downsample(self, width: int) -> list[tuple[float, float]]:
        return minmax_downsample(self.xs, self.ys, width, all_finite=True)


def loss(i: int, rng: random.Random) -> float:
    return 2.0 * math.exp(-i / 200_000) + 0.05 * rng.random() + (5.0 if i == 300_000 else 0.0)


def redraw_ms(store: Series | Naive, start: int, width: int, rounds: int, rng: random.Random) -> list[float]:
    out = []
    for r in range(rounds):
        store.add(start + r, loss(start + r, rng))
        t0 = time.perf_counter()
        pts = store.downsample(width)
        out.append((time.perf_counter() - t0) * 1e3)
        assert len(pts) <= width
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=7 * 24 * 3600)
    ap.add_argument("--width", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=51)
    a = ap.parse_args()
    rng = random.Random(1)
    series, naive = Series(), Naive()
    t0 = time.perf_counter()
    for i in range(a.points):
        y = loss(i, rng)
        series.add(i, y)
        naive.add(i, y)
    print(f"filled {a.points} points into both in {time.perf_counter() - t0:.1f} s")
    s = statistics.median(redraw_ms(series, a.points, a.width, a.rounds, rng))
    n = statistics.median(redraw_ms(naive, a.points, a.width, a.rounds, rng))
    short = Series()
    m = statistics.median(redraw_ms(short, 0, a.width, 60, rng))  # a minute at one point per second
    spike = max(y for _, y in series.downsample(a.width)) if a.points > 300_000 else float("nan")
    print(
        f"Series: {len(series)} points held (capacity {series.capacity}), bucket {series.bucket_size} raw pts"
    )
    print(f"naive:  {len(naive.xs)} points held")
    print(f"median redraw (add 1 point + downsample to {a.width}), {a.rounds} rounds:")
    print(f"  Series {s:.3f} ms   naive {n:.3f} ms   ratio naive/Series {n / s:.0f}x")
    print(f"  for scale, a minute-long job (60 points): Series {m:.3f} ms")
    print(f"spike survives in Series.downsample: max y = {spike:.2f}")


if __name__ == "__main__":
    main()
