"""Trainer overhead benchmark: `python -m trainer` against a bare PyTorch loop, same model/data/batch/precision.

    python bench/bench_trainer.py                  # CPU: interleaved runs, medians, ratio (goal >= 0.97)
    python bench/bench_trainer.py --precision bf16 --model resnet18 --image-size 64
    python bench/bench_trainer.py gpu              # on a GPU host: ResNet-50, bf16, channels_last, 224x224

Each run is its own process (the same cold start for both); throughput counts only the steps after
the first logging window, so start-up and worker spawn are left out of both sides alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bare(a: argparse.Namespace) -> None:
    """The minimal loop a person would write by hand: no checkpoints, no reporting beyond a timer."""
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader

    from trainer.data import SyntheticImages
    from trainer.models import build_model

    torch.manual_seed(0)
    ds = SyntheticImages(2048, a.image_size, 10, 0)
    keys = [[(0, (s * a.batch_size + j) % len(ds)) for j in range(a.batch_size)] for s in range(a.steps)]
    extra = {"persistent_workers": True, "prefetch_factor": 4} if a.workers else {}
    cuda = torch.cuda.is_available()
    loader = DataLoader(ds, batch_sampler=keys, num_workers=a.workers, pin_memory=cuda, **extra)
    dev = torch.device("cuda" if cuda else "cpu")
    fmt = torch.channels_last
    model = build_model(a.model, 10).to(dev, memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    t = time.perf_counter()
    for i, (x, y, _, _) in enumerate(loader, 1):
        x, y = x.to(dev, non_blocking=True, memory_format=fmt), y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i % a.window == 0:
            loss.item()  # the same one sync per window as the trainer's report
            now = time.perf_counter()
            print(json.dumps({"step": i, "samples_per_sec": a.window * a.batch_size / (now - t)}), flush=True)
            t = now


def run_once(kind: str, a: argparse.Namespace, ckdir: str) -> float:
    common = ["--steps", str(a.steps), "--batch-size", str(a.batch_size), "--workers", str(a.workers)]
    common += ["--model", a.model, "--image-size", str(a.image_size), "--precision", a.precision]
    if kind == "trainer":
        cmd = [sys.executable, "-m", "trainer", *common, "--log-every", str(a.window), "--no-resume"]
        cmd += ["--checkpoint-dir", ckdir]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "bare", *common, "--window", str(a.window)]
    env = {**os.environ, "OMP_NUM_THREADS": str(a.threads)}  # the same thread count on both sides
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    rates = [o["samples_per_sec"] for o in map(json.loads, out.splitlines()) if "samples_per_sec" in o]
    # Equal-sized windows: the harmonic mean is total samples over total time, after the first window.
    return statistics.harmonic_mean(rates[1:])


def compare(a: argparse.Namespace) -> None:
    import tempfile

    results: dict[str, list[float]] = {"trainer": [], "bare": []}
    with tempfile.TemporaryDirectory() as ckdir:
        for r in range(a.rounds):
            order = ("trainer", "bare") if r % 2 == 0 else ("bare", "trainer")  # interleaved, alternating
            for kind in order:
                results[kind].append(run_once(kind, a, ckdir))
    med = {k: statistics.median(v) for k, v in results.items()}
    print(
        json.dumps(
            {
                "model": a.model,
                "precision": a.precision,
                "batch": a.batch_size,
                "image_size": a.image_size,
                "workers": a.workers,
                "threads": a.threads,
                "runs": {k: [round(x, 1) for x in v] for k, v in results.items()},
                "median_samples_per_sec": {k: round(v, 1) for k, v in med.items()},
                "ratio": round(med["trainer"] / med["bare"], 4),
            }
        )
    )


def gpu(a: argparse.Namespace) -> None:
    """ResNet-50 training throughput and how busy the GPU was meanwhile (NVML, 10 Hz)."""
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            samples.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)

    cmd = [sys.executable, "-m", "trainer", "--model", "resnet50", "--precision", "bf16", "--channels-last"]
    cmd += ["--image-size", "224", "--batch-size", str(a.batch_size), "--steps", str(a.steps)]
    cmd += ["--log-every", str(a.window), "--no-resume", "--checkpoint-dir", "/tmp/bench-gpu-ckpt"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    rates = []
    assert proc.stdout is not None
    for line in proc.stdout:
        obj = json.loads(line)
        if "samples_per_sec" in obj:
            rates.append(obj["samples_per_sec"])
            if len(rates) == 2:  # steady state starts after the first window
                threading.Thread(target=sample, daemon=True).start()
    done.set()
    proc.wait()
    busy = statistics.mean(samples) if samples else float("nan")
    print(
        json.dumps({"images_per_sec": round(statistics.median(rates[1:]), 1), "gpu_busy_pct": round(busy, 1)})
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", nargs="?", choices=["compare", "bare", "gpu"], default="compare")
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--window", type=int, default=20, help="steps per throughput window")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--model", default="tiny")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of both sides")
    a = p.parse_args()
    if a.mode == "gpu":
        if a.batch_size == 64:
            a.batch_size = 256
        gpu(a)
    else:
        {"compare": compare, "bare": bare}[a.mode](a)


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    main()
