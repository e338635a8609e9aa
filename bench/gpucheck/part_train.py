"""ResNet-50 on the GPU with bf16 autocast: the reference trainer's images/s, the GPU's own rate
without data loading, and a real CUDA out-of-memory with the trainer's backoff."""

from __future__ import annotations

import statistics

from .context import Context
from .result import PartResult, fail, ok
from .trainer_run import run_trainer

# NVIDIA's published ResNet-50 v1.5 training throughput on one A100 with mixed precision.
A100_ANCHOR = 2470.0
RESNET50 = ["--model", "resnet50", "--precision", "bf16", "--image-size", "224", "--num-classes", "1000"]


def vs_anchor(rate: float) -> str:
    return f"{rate:,.0f} img/s = {rate / A100_ANCHOR:.2f} × A100 ({A100_ANCHOR:,.0f})"


def loader_flags(ctx: Context, batch: int) -> list[str]:
    """Batches cross /dev/shm from the DataLoader workers: no more in flight than half of it holds."""
    per_batch = batch * 3 * 224 * 224 * 4 / 2**20  # MiB of float32 images
    in_flight = int((ctx.facts.get("shm_mib") or 0) / 2 / per_batch)
    if in_flight < 1:
        return ["--workers", "0"]  # a default container's 64 MiB: the main process makes the data
    workers = min(8, max(1, (ctx.facts.get("cpus") or 2) - 1), in_flight)
    return ["--workers", str(workers), "--prefetch", str(max(1, min(4, in_flight // workers)))]


def trainer_resnet50(ctx: Context) -> PartResult:
    steps = 50 if ctx.quick else 120
    batch = 256
    args = [*RESNET50, "--batch-size", str(batch), "--steps", str(steps), "--log-every", "10"]
    args += [*loader_flags(ctx, batch), "--no-resume", "--checkpoint-dir", str(ctx.tmp / "ckpt-speed")]
    run = run_trainer(ctx, args)
    rate = run.steady_rate()
    details = {"args": args, "rates": run.rates(), "gpu_util": run.utils, "rc": run.rc}
    if rate is None:
        return fail(f"no throughput window: {run.why()}", details=details)
    busy = f"GPU util mean {statistics.mean(run.utils):.0f} %" if run.utils else "GPU util not sampled"
    reason = f"{busy}; batch {batch}, {' '.join(loader_flags(ctx, batch))}"
    if run.rc != 0:
        return fail(f"{run.why()} ({reason})", vs_anchor(rate), details=details)
    return ok(vs_anchor(rate), reason, details={"images_per_sec": rate, **details})


def bare_resnet50(ctx: Context) -> PartResult:
    warmup, steps = (8, 20) if ctx.quick else (15, 50)
    child = ctx.torch_side("bare", "--batch", "256", "--warmup", str(warmup), "--steps", str(steps))
    got = child.next_object(lambda o: "images_per_sec" in o, timeout=max(1.0, ctx.left() - 3))
    if got is None:
        return fail(f"no result: {child.stderr_tail() or 'no output'}")
    rate = got["images_per_sec"]
    reason = f"data already on the GPU, cudnn.benchmark; peak {got['max_mem_mib']} MiB"
    return ok(vs_anchor(rate), reason, details=got)


def oom_backoff(ctx: Context) -> PartResult:
    """All but `--oom-headroom-mib` of the GPU held by a ballast process, then the trainer at batch 512:
    a real CUDA OOM, cheap to feed, on any card size; it must back off and finish."""
    headroom = int(ctx.options.get("oom_headroom_mib", 10240))
    ballast = ctx.torch_side(
        "ballast", "--leave-mib", str(headroom), "--seconds", str(max(10, int(ctx.left())))
    )
    held = ballast.next_object(lambda o: bool(o.get("ready")), timeout=max(1.0, ctx.left() - 30))
    if held is None:
        return fail(f"the ballast process never got ready: {ballast.stderr_tail() or 'no output'}")
    args = [*RESNET50, "--batch-size", "512", "--steps", "2", "--log-every", "1", *loader_flags(ctx, 512)]
    args += ["--no-resume", "--checkpoint-dir", str(ctx.tmp / "ckpt-oom")]
    run = run_trainer(ctx, args)
    backoffs = [o["micro_batch"] for o in run.events("oom_backoff")]
    chain = " → ".join(str(m) for m in [512, *backoffs])
    details = {"ballast": held, "backoffs": backoffs, "rc": run.rc, "args": args}
    raw = held.get("raw_oom")
    if not raw:
        return fail(
            "a 2× device-size allocation did not raise torch.OutOfMemoryError", chain, details=details
        )
    if not backoffs:
        return fail(
            f"no oom_backoff with {held['free_mib']} MiB free at micro-batch 512: {run.why()}",
            details=details,
        )
    if run.rc != 0 or not run.events("done"):
        return fail(f"after backing off {chain}: {run.why()}", f"micro-batch {chain}", details=details)
    return ok(f"micro-batch {chain}", f"{raw[:80]}; {held['free_mib']} MiB left free; done", details=details)
