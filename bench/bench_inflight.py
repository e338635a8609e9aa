"""A launch never blocks the controller's pass, measured: one pass in which a managed recovery must
launch a cloud instance that takes BOOT seconds to run and answer SSH, while a queued job's GPU is
free and a rule wants a job grown. The time until that pass returns (the queued job started, the
rule applied) is measured with the launch as in-flight work (policy/inflight.py) beside the
baseline in the same run: the launch inline, as the pass did before (and as `--once` still does).

    python bench/bench_inflight.py [--boot 3] [--rounds 5]

Fakes stand for the agents and the cloud (tests/test_controller_inflight.py); the managed pass,
the queue's pass, the journal and the controller are the real ones.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_controller_inflight import Agents, BootingCloud, controller, setup  # noqa: E402
from tui.policy.inflight import InFlight  # noqa: E402


def one_pass(boot: float, inline: bool) -> tuple[float, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        setup(path)
        agents, cloud = Agents(), BootingCloud()
        agents.busy.clear()  # the queued job's GPU is free
        flights = InFlight(inline=inline)
        ctl, _ = controller(path, agents, cloud, flights)

        def boots() -> None:
            time.sleep(boot)
            cloud.gate.set()

        threading.Thread(target=boots, daemon=True).start()
        t0 = time.perf_counter()
        records = ctl.tick()
        took = time.perf_counter() - t0
        cloud.gate.set()
        flights.wait(timeout=boot + 30)
        return took, [f"{r.get('kind') or r.get('rule')}:{r['outcome']}" for r in records]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boot", type=float, default=3.0, help="seconds the instance takes to answer")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"inline (before)": [], "in flight": []}
    said: dict[str, list[str]] = {}
    for _ in range(args.rounds):
        for label, inline in (("inline (before)", True), ("in flight", False)):
            took, what = one_pass(args.boot, inline)
            times[label].append(took)
            said[label] = what
    print(f"one pass, a recovery's instance booting {args.boot:g} s; {args.rounds} rounds, medians:")
    for label, values in times.items():
        print(f"  {label:16} {statistics.median(values) * 1000:9.1f} ms   records: {', '.join(said[label])}")


if __name__ == "__main__":
    main()
