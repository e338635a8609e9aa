"""The CUDA side of the check, run as a child process: `python -m bench.gpucheck.torch_side MODE`.

Each mode prints JSON lines: `probe` what torch sees; `busy` holds memory and keeps the GPU busy;
`ballast` shows a raw CUDA OOM, then holds all but some memory (so the trainer runs out at a batch
cheap to feed); `bare` times ResNet-50 training steps on data already on the GPU (no loader).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

MIB = 1024 * 1024


def say(**obj: object) -> None:
    print(json.dumps(obj), flush=True)


def probe() -> None:
    try:
        import torch
    except Exception as e:  # absent, or a build that does not load here
        say(torch=None, cuda=False, reason=f"torch not importable ({type(e).__name__}: {e})")
        return
    if not torch.cuda.is_available():
        build = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        say(
            torch=torch.__version__,
            cuda=False,
            reason=f"torch {torch.__version__} sees no CUDA device ({build})",
        )
        return
    props = torch.cuda.get_device_properties(0)
    say(
        torch=torch.__version__,
        cuda=True,
        cuda_runtime=torch.version.cuda,
        device=props.name,
        capability=f"{props.major}.{props.minor}",
        mem_total_mib=props.total_memory // MIB,
        bf16=torch.cuda.is_bf16_supported(),
        devices=torch.cuda.device_count(),
    )


def busy(mib: int, seconds: float) -> None:
    """Hold `mib` MiB and run bf16 matmuls back to back, so NVML sees memory, a process and util."""
    import os

    import torch

    held = torch.empty(mib * MIB, dtype=torch.uint8, device="cuda")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
    say(ready=True, pid=os.getpid(), held_mib=mib)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()
    del held


def ballast(leave_mib: int, seconds: float) -> None:
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    try:
        torch.empty(2 * total, dtype=torch.uint8, device="cuda")
        raised = None
    except torch.OutOfMemoryError as e:  # = torch.cuda.OutOfMemoryError
        raised = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    blocks = []
    while True:  # 1 GiB blocks: a fragmented device still fills up
        free, _ = torch.cuda.mem_get_info()
        want = min(1024 * MIB, free - leave_mib * MIB)
        if want < 64 * MIB:
            break
        blocks.append(torch.empty(want, dtype=torch.uint8, device="cuda"))
    free, _ = torch.cuda.mem_get_info()
    say(ready=True, raw_oom=raised, held_mib=sum(b.numel() for b in blocks) // MIB, free_mib=free // MIB)
    time.sleep(seconds)


def bare(batch: int, warmup: int, steps: int, image_size: int) -> None:
    """The GPU's own ResNet-50 rate: trainer's model, bf16 autocast, channels_last, SGD; no data loading."""
    import torch
    import torch.nn.functional as F

    from trainer.models import build_model

    torch.backends.cudnn.benchmark = True
    fmt = torch.channels_last
    model = build_model("resnet50", 1000).cuda().to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-5)
    x = torch.randn(batch, 3, image_size, image_size, device="cuda").to(memory_format=fmt)
    y = torch.randint(0, 1000, (batch,), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    peak = torch.cuda.max_memory_allocated() // MIB
    say(images_per_sec=batch * steps / seconds, steps=steps, batch=batch, seconds=seconds, max_mem_mib=peak)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="torch_side")
    sub = p.add_subparsers(dest="mode", required=True)
    sub.add_parser("probe")
    b = sub.add_parser("busy")
    b.add_argument("--mib", type=int, default=1024)
    b.add_argument("--seconds", type=float, default=30)
    o = sub.add_parser("ballast")
    o.add_argument("--leave-mib", type=int, default=10240)
    o.add_argument("--seconds", type=float, default=120)
    r = sub.add_parser("bare")
    r.add_argument("--batch", type=int, default=256)
    r.add_argument("--warmup", type=int, default=15)
    r.add_argument("--steps", type=int, default=40)
    r.add_argument("--image-size", type=int, default=224)
    a = p.parse_args(argv)
    if a.mode == "probe":
        probe()
    elif a.mode == "busy":
        busy(a.mib, a.seconds)
    elif a.mode == "ballast":
        ballast(a.leave_mib, a.seconds)
    else:
        bare(a.batch, a.warmup, a.steps, a.image_size)


if __name__ == "__main__":
    sys.exit(main())
