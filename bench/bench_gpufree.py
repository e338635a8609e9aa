"""What proving a job's GPUs free adds to its end (remote_agent/gpus/leftover.py `check`): one NVML
sample with processes, a /proc/PID/environ read per process NVML lists, a second sample. Beside it,
the baseline every end already pays: `job_tree` (the /proc walk that finds the job's processes).
NVML is the test fake (tests/fakes/nvml) listing N real, live processes that are not the job's on
GPUs that are not the job's (nothing is killed; the figure is the check's own work).

    python bench/bench_gpufree.py [--holders 64] [--rounds 50]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def load_fake_nvml():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("pynvml", ROOT / "tests" / "fakes" / "nvml" / "pynvml.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pynvml"] = module
    spec.loader.exec_module(module)
    return module


def median_ms(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    took = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--holders", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=50)
    args = ap.parse_args()
    nvml = load_fake_nvml()
    from remote_agent.gpus import leftover
    from remote_agent.probes.gpu import Nvml
    from remote_agent.supervision.proctree import job_tree

    procs = [subprocess.Popen(["sleep", "600"]) for _ in range(args.holders)]
    try:
        per_gpu = max(1, args.holders // 8)
        nvml.GPUS.extend(
            nvml.FakeGpu(
                uuid=f"GPU-{i}", compute=[(p.pid, 1 << 30) for p in procs[i * per_gpu : (i + 1) * per_gpu]]
            )
            for i in range(8)
        )
        session = Nvml()
        key = "20261206-000000-aaaaaa/0"
        check = median_ms(lambda: leftover.check(session, key, ["GPU-none"], 1.0), args.rounds)
        tree = median_ms(lambda: job_tree(key, None), args.rounds)
        print(f"holders listed by NVML: {args.holders} on 8 GPUs, rounds: {args.rounds}")
        print(f"gpu check (leftover.check): median {check:.2f} ms")
        print(f"baseline job_tree (every end already walks /proc): median {tree:.2f} ms")
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
