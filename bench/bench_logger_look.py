"""What looking for a Lightning logger dir costs while none is found (loggerfiles/discover.py):
the supervisor's thread looks once a second, and the output reader once per chunk of output that
carries a stepless value. Side by side with the baseline that chunk already pays: parsing one
Rich frame. Medians of ROUNDS.

    python bench/bench_logger_look.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable

from remote_agent.loggerfiles.discover import VersionDirFinder
from remote_agent.metrics import LineParser

FRAME = "Epoch 0/2 ━━━━━━━━━━━━━━━━ 3/5 0:00:01 • 0:00:01 12.30it/s v_num: 0 train_loss: 1.234"


def per_call_us(fn: Callable[[], object], number: int, rounds: int) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=rounds)) / number * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp()
    finder = VersionDirFinder(workdir, time.time())
    none = per_call_us(finder.look, 100000, args.rounds)
    old = os.path.join(workdir, "lightning_logs", "version_0")
    os.makedirs(old)
    os.utime(old, (1, 1))  # a previous run's: never the job's, so looked at again each time
    only_old = per_call_us(finder.look, 100000, args.rounds)
    parser = LineParser()
    parse = per_call_us(lambda: parser.parse(FRAME), 10000, args.rounds)
    print(f"look, no lightning_logs/:               {none:7.2f} us")
    print(f"look, lightning_logs/ with an old run:  {only_old:7.2f} us")
    print(f"baseline: parse one Rich frame:         {parse:7.2f} us")


if __name__ == "__main__":
    main()
