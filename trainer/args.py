"""Command line of `python -m trainer`: every knob, with defaults chosen from the machine."""

from __future__ import annotations

import argparse
import os


def cpus_per_rank() -> int:
    """The CPUs this process may use, shared by the ranks on this machine."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))


def default_workers() -> int:
    """DataLoader workers per rank: keep one core for the training loop itself."""
    return max(0, min(8, cpus_per_rank() - 1))


def default_threads(workers: int) -> int:
    """Intra-op threads of the training process: the cores the workers leave. Oversubscribing cores
    stalls torch's thread barriers (measured here: 2 threads + 1 worker on 2 cores ran 6x slower)."""
    return max(1, cpus_per_rank() - workers)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trainer",
        description="Reference image-model trainer for gpudeck: prints one JSON object per step on stdout.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    g = p.add_argument_group("schedule")
    g.add_argument("--steps", type=int, default=100, help="total optimizer steps (reported as total_steps)")
    g.add_argument(
        "--batch-size", type=int, default=32, help="global batch per optimizer step, all ranks together"
    )
    g.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        help="per-rank batch per forward pass, the rest is gradient accumulation (None: batch / world)",
    )
    g.add_argument("--lr", type=float, default=0.1, help="peak learning rate (SGD, momentum 0.9)")
    g.add_argument("--weight-decay", type=float, default=5e-4)
    g.add_argument("--warmup", type=float, default=0.05, help="share of the steps spent warming up the lr")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--log-every", type=int, default=1, help="print a metrics line every N steps")

    g = p.add_argument_group("data")
    src = g.add_mutually_exclusive_group()
    src.add_argument(
        "--data",
        metavar="DIR",
        default=None,
        help="image folder: one sub-folder per class of JPEG/PNG files (needs Pillow)",
    )
    src.add_argument("--synthetic", action="store_true", help="synthetic learnable images (the default)")
    g.add_argument("--synthetic-size", type=int, default=2048, help="training samples in the synthetic set")
    g.add_argument("--val-size", type=int, default=256, help="validation samples (synthetic) ")
    g.add_argument(
        "--val-split", type=float, default=0.1, help="share of each class held out for validation (--data)"
    )
    g.add_argument(
        "--skip-image-check", action="store_true", help="--data: do not open every file's header at start"
    )
    g.add_argument("--val-every", type=int, default=0, help="validate every N steps (0: never)")
    g.add_argument("--image-size", type=int, default=32)
    g.add_argument("--num-classes", type=int, default=10, help="synthetic set (--data: the class folders)")
    g.add_argument("--augment", action="store_true", help="random resized crop, flip and colour jitter")
    g.add_argument(
        "--workers", type=int, default=default_workers(), help="DataLoader worker processes per rank"
    )
    g.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads of the training process (default: cores the workers leave; OMP_NUM_THREADS wins)",
    )
    g.add_argument("--prefetch", type=int, default=4, help="batches prefetched per worker")

    g = p.add_argument_group("model and speed")
    g.add_argument("--model", choices=["tiny", "resnet18", "resnet50"], default="tiny")
    g.add_argument("--pretrained", metavar="PATH", default=None, help="local state_dict to start from")
    g.add_argument(
        "--precision",
        choices=["auto", "fp32", "bf16", "fp16"],
        default="auto",
        help="auto: bf16 on GPUs that have it, else fp16 on GPUs, fp32 on CPU (fp16 on a CPU is refused: tens of times slower)",
    )
    g.add_argument("--channels-last", action=argparse.BooleanOptionalAction, default=True)
    g.add_argument("--compile", action="store_true", help="torch.compile the model")
    g.add_argument(
        "--activation-checkpointing", action="store_true", help="recompute block activations in backward"
    )

    g = p.add_argument_group("checkpoints")
    g.add_argument("--checkpoint-dir", default="checkpoints", help="local checkpoint directory")
    g.add_argument(
        "--checkpoint-every", type=int, default=0, help="checkpoint every N steps (0: only on stop/end)"
    )
    g.add_argument(
        "--checkpoint-minutes", type=float, default=0.0, help="also checkpoint every M minutes (0: off)"
    )
    g.add_argument("--keep", type=int, default=3, help="checkpoints kept in --checkpoint-dir")
    g.add_argument(
        "--checkpoint-uri", default=None, help="also upload to s3://bucket/prefix; resume from there"
    )
    g.add_argument("--s3-endpoint", default=None, help="endpoint URL of an S3-compatible store (e.g. OSS)")
    g.add_argument("--s3-addressing", choices=["auto", "virtual", "path"], default="auto")
    g.add_argument("--upload-wait", type=float, default=20.0, help="seconds to wait for uploads at exit")
    how = g.add_mutually_exclusive_group()
    how.add_argument("--no-resume", action="store_true", help="start fresh even if this run has a checkpoint")
    how.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest checkpoint in --checkpoint-dir, whichever run wrote it",
    )
    g.add_argument(
        "--run-id",
        default=None,
        help="resume only checkpoints of this run (default: $GPUDECK_JOB_NAME, else a new run)",
    )

    g = p.add_argument_group("distributed")
    g.add_argument("--dist-timeout", type=float, default=120.0, help="process-group timeout in seconds")
    g.add_argument(
        "--sample-log", default=None, help=argparse.SUPPRESS
    )  # tests: PATH.rankN gets "step epoch index"
    g.add_argument(
        "--inject-oom-above", type=int, default=None, help=argparse.SUPPRESS
    )  # tests: fake CUDA OOM
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "log_every", "image_size", "num_classes", "synthetic_size", "keep"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if not 0 <= args.val_split < 1:
        p.error("--val-split must be in [0, 1)")
    if args.workers < 0:
        p.error("--workers must be >= 0")
    if args.micro_batch is not None and args.micro_batch < 1:
        p.error("--micro-batch must be at least 1")
    return args
