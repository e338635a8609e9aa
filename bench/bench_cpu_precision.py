"""Why the trainer refuses `--precision fp16` on a CPU: a training step of the trainer's own model
under fp16 autocast against fp32, on the CPU, interleaved rounds, medians (issue 32, item 7).

    python bench/bench_cpu_precision.py                      # tiny model, 32x32, batch 64
    python bench/bench_cpu_precision.py --model resnet18 --image-size 64 --rounds 3

Each round times `--steps` steps of each precision in turn (one warm-up step first, not timed), in
this one process, one thread (OMP_NUM_THREADS=1 unless set): the same model, data and optimizer.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="tiny")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    import torch.nn.functional as F

    from trainer.models import build_model

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    torch.manual_seed(0)
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size)
    y = torch.randint(0, 10, (a.batch_size,))
    models = {name: build_model(a.model, 10, False) for name in ("fp32", "fp16", "bf16")}
    opts = {name: torch.optim.SGD(m.parameters(), lr=0.01) for name, m in models.items()}

    def step(name: str) -> None:
        ctx = (
            contextlib.nullcontext()
            if name == "fp32"
            else torch.autocast("cpu", dtype=torch.float16 if name == "fp16" else torch.bfloat16)
        )
        with ctx:
            loss = F.cross_entropy(models[name](x), y)
        opts[name].zero_grad(set_to_none=True)
        loss.backward()
        opts[name].step()

    times: dict[str, list[float]] = {name: [] for name in models}
    for name in models:
        step(name)  # warm-up: kernels chosen, memory allocated
    for _ in range(a.rounds):
        for name in models:
            t0 = time.perf_counter()
            for _ in range(a.steps):
                step(name)
            times[name].append((time.perf_counter() - t0) / a.steps)
    base = statistics.median(times["fp32"])
    print(f"torch {torch.__version__}, {a.model} {a.image_size}x{a.image_size}, batch {a.batch_size}, "
          f"{os.environ['OMP_NUM_THREADS']} thread(s), {a.rounds} rounds x {a.steps} steps")  # fmt: skip
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name}: median {med * 1000:.1f} ms/step ({med / base:.1f}x fp32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
