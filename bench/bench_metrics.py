"""Throughput of remote_agent.metrics.parse_line on typical training output.

The mix is what a job prints: about 90 % of lines carry no metric (warnings, downloads, model
summaries, bars without metrics, NCCL chatter, timestamps), 10 % are metric lines from the
frameworks gpudeck understands, with new digits each time (as a run prints them; ``--verbatim``
repeats them unchanged). ``LineParser`` is the supervisor's reader (one per job: table headers
and the template fast path); ``parse_line`` the pure function it falls back to. Baselines run on the same lines in the same process:
``split`` only splits each line (the floor any reader pays) and ``kv-regex`` is a naive
single-regex ``key=value`` reader. Prints the median lines/s of several rounds (per CPU second,
so a busy shared machine distorts it less) and the ratios.

    python bench/bench_metrics.py [--lines 100000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from remote_agent.metrics import LineParser, parse_line  # noqa: E402

LOGS = ROOT / "tests" / "data" / "logs"

NOISE = [
    "2024-05-01 10:00:01,123 - INFO - Loading checkpoint shards from /data/models/llama-7b",
    "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py:1511: UserWarning: something changed",
    "  warnings.warn(",
    "Downloading data: 100%|██████████| 21.0M/21.0M [00:01<00:00, 15.2MB/s]",
    "Map: 100%|██████████| 25000/25000 [00:05<00:00, 4512.31 examples/s]",
    " 45%|████▌     | 450/1000 [01:23<01:40,  5.42it/s]",
    "NCCL INFO Channel 00/02 : 0 1 2 3 4 5 6 7",
    "node01:12345:12345 [0] NCCL INFO Using network IB",
    "[rank3]:[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500",
    "  0                  -1  1       464  ultralytics.nn.modules.conv.Conv             [3, 16, 3, 2]",
    "Model summary: 225 layers, 3,011,238 parameters, 3,011,222 gradients, 8.2 GFLOPs",
    "Saving model checkpoint to out/checkpoint-1500",
    "Epoch 3/100",
    "  Num examples = 25,000",
    "Using 8 dataloader workers",
    "Traceback (most recent call last):",
    'File "/home/u/train.py", line 123, in <module>',
    "=" * 80,
    "",
    "INFO: Starting evaluation",
    "wandb: Syncing run fragrant-sun-12",
    "Sanity Checking DataLoader 0: 100%|██████████| 2/2 [00:00<00:00, 12.01it/s]",
]


def metric_lines() -> list[str]:
    lines = []
    for path in sorted(LOGS.glob("*.log")):
        for line in re.split(r"\r\n|\r|\n", path.read_text(encoding="utf-8")):
            if parse_line(line) is not None:
                lines.append(line)
    lines += [
        "iter 10: loss 3.2202, time 893.76ms, mfu 16.68%",
        "Epoch: [0]  [  10/5005]  eta: 1:23:45  lr: 0.1  img/s: 250.3  loss: 6.9100 (6.9321)  acc1: 0.0000 (0.1420)  time: 0.9876",
        " [2023-06-01 12:00:00] iteration      100/  500000 | consumed samples:        12800 | learning rate: 1.500E-05 | lm loss: 7.123456E+00 | loss scale: 65536.0 | grad norm: 2.345 |",
        '{"step": 100, "loss": 2.31, "lr": 0.0003, "grad_norm": 1.2, "tokens_per_sec": 12345.6}',
        "1875/1875 ━━━━━━━━━━━━━━━━━━━━ 3s 1ms/step - accuracy: 0.8785 - loss: 0.4291 - val_accuracy: 0.9599 - val_loss: 0.1350",
    ]
    return lines


def corpus(size: int, metric_share: float = 0.1, vary: bool = True) -> list[str]:
    """The mix; with ``vary`` every metric line gets new digits (a run's numbers change every line:
    step, loss, elapsed time), without it the same few lines repeat verbatim."""
    rng = random.Random(7)
    metrics = metric_lines()

    def metric() -> str:
        line = rng.choice(metrics)
        return re.sub(r"\d", lambda _: str(rng.randint(0, 9)), line) if vary else line

    return [metric() if rng.random() < metric_share else rng.choice(NOISE) for _ in range(size)]


_NAIVE_KV = re.compile(r"([A-Za-z_]\w*)\s*[=:]\s*([-+]?\d+\.?\d*(?:[eE][-+]?\d+)?)")


def naive_kv(line: str) -> dict[str, float]:
    return {k: float(v) for k, v in _NAIVE_KV.findall(line)}


def split_only(line: str) -> list[str]:
    return line.split()


def stream_parser(line: str) -> object:  # replaced per round: each round learns its templates anew
    return None


def rate(fn: Callable[[str], object], lines: list[str], rounds: int) -> float:
    results = []
    for _ in range(rounds):
        if fn is stream_parser:
            fn = LineParser().parse  # the supervisor's reader: one per job, tables and templates
        start = time.process_time()  # CPU time: other work on a shared machine does not count
        for line in lines:
            fn(line)
        results.append(len(lines) / (time.process_time() - start))
    return statistics.median(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--verbatim", action="store_true", help="metric lines repeat verbatim (no new numbers)"
    )
    args = parser.parse_args()

    lines = corpus(args.lines, vary=not args.verbatim)
    points = sum(1 for line in lines if parse_line(line) is not None)
    print(
        f"python {sys.version.split()[0]}, {len(lines)} lines, {points} metric points ({points / len(lines):.0%})"
    )
    rates = {
        "split (baseline)": rate(split_only, lines, args.rounds),
        "kv-regex (baseline)": rate(naive_kv, lines, args.rounds),
        "parse_line": rate(parse_line, lines, args.rounds),
        "LineParser (per job)": rate(stream_parser, lines, args.rounds),
    }
    for name, value in rates.items():
        print(f"{name:22s} {value:12,.0f} lines/s (median of {args.rounds})")
    ours = rates["parse_line"]
    print(f"parse_line / split     {ours / rates['split (baseline)']:.3f}")
    print(f"parse_line / kv-regex  {ours / rates['kv-regex (baseline)']:.3f}")
    metric_only = [line for line in lines if parse_line(line) is not None]
    print(f"parse_line on metric lines only: {rate(parse_line, metric_only, args.rounds):,.0f} lines/s")
    print(f"LineParser on metric lines only: {rate(stream_parser, metric_only, args.rounds):,.0f} lines/s")
    print(f"LineParser / parse_line on the mix: {rates['LineParser (per job)'] / ours:.2f}")
    flood = [f"step={i} loss={1.0 / i:.6f} lr=0.0003" for i in range(1, len(lines) + 1)]
    flood_parse, flood_stream = rate(parse_line, flood, args.rounds), rate(stream_parser, flood, args.rounds)
    print(f"a flood of one template (step=N loss=X lr=...): parse_line {flood_parse:,.0f} lines/s, "
          f"LineParser {flood_stream:,.0f} lines/s ({flood_stream / flood_parse:.2f}x)")  # fmt: skip
    print("target: >= 50,000 lines/s on the mix:", "OK" if ours >= 50_000 else "TOO SLOW")


if __name__ == "__main__":
    main()
