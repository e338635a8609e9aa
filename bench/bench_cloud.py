"""`cloud ls` / `cloud idle` cost: one fleet snapshot (list, a price and a GPU metric per instance)
against the local Aliyun endpoint (tests/support/aliyun.py) with a simulated provider latency per
call. Side by side in the same run: the snapshot with 1 worker (one call after another, what a
naive loop does) and with the default 8 — medians and their ratio.

    python bench/bench_cloud.py [--instances 40] [--latency-ms 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import aliyun as fake  # noqa: E402
from tui.cloud.fleet import snapshot  # noqa: E402
from tui.settings import Settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--latency-ms", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with pytest.MonkeyPatch.context() as mp, fake.serving(mp) as server:
        server.account.latency_s = args.latency_ms / 1000  # a provider's round trip, not our CPU
        now = time.time()
        for k in range(args.instances):
            iid = server.account.add(name=f"gpu{k}")
            server.account.metrics[iid] = [(now - 60 * m, float(k % 7)) for m in range(60)]
        times: dict[int, list[float]] = {1: [], 8: []}
        for _ in range(args.rounds):
            for workers in (1, 8):
                start = time.perf_counter()
                snap = snapshot(Settings(), "aliyun", workers=workers)
                times[workers].append(time.perf_counter() - start)
                assert len(snap.views) == args.instances and not snap.errors, snap.errors
    serial, parallel = statistics.median(times[1]), statistics.median(times[8])
    print(f"instances={args.instances} latency={args.latency_ms:g} ms rounds={args.rounds}")
    print(f"snapshot, 1 worker : median {serial:.2f} s")
    print(f"snapshot, 8 workers: median {parallel:.2f} s  ({serial / parallel:.1f}x faster)")


if __name__ == "__main__":
    main()
