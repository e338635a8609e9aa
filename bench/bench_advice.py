"""What the advice check (remote_agent/advice/watch.py) adds to the supervisor's output path: the
time per line of `AdviceWatch.lines` beside `LineParser.parse_many`, which every chunk of output
already goes through, on the same dense metric stream (chunks of 100 JSON step lines, as a job
printing thousands of lines a second hands them over). Medians of 7 rounds.

    python bench/bench_advice.py [--lines 200000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remote_agent.advice.watch import AdviceWatch  # noqa: E402
from remote_agent.metrics import LineParser  # noqa: E402

CHUNK = 100
ROUNDS = 7


def chunks(n: int, text: bool) -> list[list[str]]:
    """JSON step lines (no capital letter: the one-character test ends the check), or log lines
    with capitals (`Epoch 3 Step 120: loss=…`: the word tests run too)."""
    if text:
        lines = [f"Epoch {i // 1000} Step {i}: loss={1.0 / (i + 1):.4f} lr=0.1" for i in range(n)]
    else:
        lines = [
            json.dumps({"step": i, "loss": 1.0 / (i + 1), "lr": 0.1, "epoch": i // 1000}) for i in range(n)
        ]
    return [lines[i : i + CHUNK] for i in range(0, n, CHUNK)]


def time_parse(data: list[list[str]]) -> float:
    parser = LineParser()
    start = time.perf_counter()
    for chunk in data:
        parser.parse_many(chunk)
    return time.perf_counter() - start


def time_advice(data: list[list[str]]) -> float:
    watch = AdviceWatch({"argv": ["python", "-m", "trainer"]})
    entries = [("metric", {"values": {"step": 1}})] * CHUNK
    start = time.perf_counter()
    for chunk in data:
        watch.lines(chunk, entries)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000)
    n = ap.parse_args().lines
    for name, text in (("JSON step lines", False), ("text log lines", True)):
        data = chunks(n, text)
        parse = statistics.median(time_parse(data) for _ in range(ROUNDS))
        advice = statistics.median(time_advice(data) for _ in range(ROUNDS))
        share = 100 * advice / parse
        print(f"{n:,} {name} in chunks of {CHUNK}, median of {ROUNDS}:")
        print(f"  parse_many (already there): {parse / n * 1e6:.2f} µs/line")
        print(f"  advice check (added):       {advice / n * 1e6:.2f} µs/line ({share:.1f} % of parsing)")


if __name__ == "__main__":
    main()
