"""The TUI's cost counters with a long history (issue #17): one `CostTracker.report()` (what the
cost thread runs every second) with N ended jobs whose journals were read whole, plus R running,
on one host with a ledger; the report with the ended nodes' figures kept (SettledCache) beside the
same report priced from scratch (the caches emptied before each), same run, medians.

    python bench/bench_cost_report.py                 # 500 ended, 0 running
    python bench/bench_cost_report.py --running 16
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tui.cost.counters import SettledCache  # noqa: E402
from tui.cost.ledger import Ledger  # noqa: E402
from tui.cost.report import CostContext, ReportMemo  # noqa: E402
from tui.cost.settings import HostPrice  # noqa: E402
from tui.cost.tracker import CostTracker  # noqa: E402

GPUS = [f"GPU-{i}" for i in range(8)]


def fleet(tracker: CostTracker, ended: int, running: int, now: float) -> None:
    """Jobs 100 s apart that ran 150 s each (two at a time), on one of 8 GPUs; the running ones still go."""
    hello = {"gpu": {"gpus": [{"uuid": u} for u in GPUS]}}
    tracker.set_host("h", HostPrice(8.0, "USD", "on-demand", "bench"), hello, 0.0, now - 86_400)
    for i in range(ended + running):
        done, start = i < ended, now - 80_000 + 100 * i
        tracker.on_job(
            "h", {"id": f"j{i:05d}", "name": f"n{i}", "state": "exited" if done else "running", "node": "0"}
        )
        recs: list[dict[str, Any]] = [
            {"seq": 1, "t": start, "kind": "state", "state": "starting"},
            {"seq": 2, "t": start + 1, "kind": "state", "state": "running"},
            {"seq": 3, "t": start + 5, "kind": "gpu", "gpus": [{"uuid": GPUS[i % 8], "util": 50}]},
            {"seq": 4, "t": start + 10, "kind": "metric", "values": {"step": 10, "total_steps": 1000}},
        ]
        if done:
            recs.append({"seq": 5, "t": start + 150, "kind": "state", "state": "exited"})
        tracker.on_records("h", f"j{i:05d}", "0", recs)


def timed(tracker: CostTracker, rounds: int, scratch: bool) -> list[float]:
    out = []
    for _ in range(rounds):
        if scratch:  # what every report cost before the cache
            tracker._settled = {name: SettledCache() for name in tracker._settled}
            tracker._memo = ReportMemo()
        t0 = time.perf_counter()
        tracker.report()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ended", type=int, default=500)
    ap.add_argument("--running", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    tracker = CostTracker(
        CostContext(), Ledger(Path(tempfile.mkdtemp(prefix="gpudeck-bench-cost-")) / "state.db")
    )
    fleet(tracker, args.ended, args.running, time.time())
    tracker.report()  # the first report writes every fact to the ledger: not what a second costs
    cached, scratch = [], []
    for _ in range(args.rounds):  # alternately, so a busy moment of the machine hits both
        cached += timed(tracker, 1, scratch=False)
        scratch += timed(tracker, 1, scratch=True)
        timed(tracker, 1, scratch=False)  # refill the cache after a scratch round
    c, s = statistics.median(cached) * 1000, statistics.median(scratch) * 1000
    print(
        f"tracker.report(), {args.ended} ended (journals read whole) + {args.running} running, one host, "
        f"median of {args.rounds}: kept figures {c:.2f} ms, from scratch {s:.1f} ms ({s / c:.0f}×)"
    )


if __name__ == "__main__":
    main()
