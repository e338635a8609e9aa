"""Builds what a run needs from the arguments: data, model, optimizer, schedule, precision, and the
checkpoint state that captures all of it."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from . import checkpoint as ckpt
from .data import KeyedDataset, Layout, SyntheticImages
from .models import build_model, load_plain_state_dict, plain_state_dict

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_precision(choice: str, device: torch.device) -> str:
    if choice == "fp16" and device.type == "cpu":
        # CPUs have no fp16 math: autocast emulates it, tens of times slower than fp32 (35x in issue 32,
        # 74x in bench/bench_cpu_precision.py here) while bf16 runs at or above fp32's speed
        raise SystemExit(
            "trainer: --precision fp16 on a CPU: no fp16 hardware there (tens of times slower than fp32); "
            "use fp32, bf16 or auto"
        )
    if choice != "auto":
        return choice
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


def build_datasets(
    args: argparse.Namespace,
) -> tuple[KeyedDataset, KeyedDataset, int]:
    """(train, val, number of classes)."""
    if getattr(args, "data", None):
        from .imagefolder import build_imagefolder  # Pillow is needed only here

        return build_imagefolder(args)
    train = SyntheticImages(
        args.synthetic_size, args.image_size, args.num_classes, args.seed, 0, args.augment
    )
    val = SyntheticImages(args.val_size, args.image_size, args.num_classes, args.seed, args.synthetic_size)
    return train, val, args.num_classes


def warmup_cosine(total: int, warmup: float) -> Callable[[int], float]:
    w = max(1, int(total * warmup))

    def factor(step: int) -> float:
        if step < w:
            return (step + 1) / w
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - w) / max(1, total - w))))

    return factor


@dataclass
class Parts:
    model: nn.Module  # the bare model; the loop wraps it (DDP, compile)
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    precision: str
    memory_format: torch.memory_format


def load_pretrained(path: str) -> dict[str, Any]:
    """A state_dict (or a trainer checkpoint) to start from; a missing or unreadable file is one line."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise SystemExit(f"trainer: --pretrained {path}: no such file") from None
    except Exception as e:  # a directory, a torn file, not a torch file, not plain tensors...
        reason = " ".join(str(e).split())[:300]
        raise SystemExit(
            f"trainer: --pretrained {path}: cannot load it: {type(e).__name__}: {reason}"
        ) from None
    if not isinstance(state, dict):
        raise SystemExit(f"trainer: --pretrained {path}: not a state_dict (a {type(state).__name__})")
    model = state.get("model", state)
    if not isinstance(model, dict):
        raise SystemExit(f"trainer: --pretrained {path}: its 'model' entry is not a state_dict")
    return model


def build_parts(args: argparse.Namespace, num_classes: int, device: torch.device) -> Parts:
    torch.manual_seed(args.seed)  # identical initial weights on every rank and every fresh run
    model = build_model(args.model, num_classes, args.activation_checkpointing)
    if args.pretrained:
        state = load_pretrained(args.pretrained)
        # A head for another number of classes stays freshly initialised.
        own = plain_state_dict(model)
        state = {k: v for k, v in state.items() if k in own and v.shape == own[k].shape}
        load_plain_state_dict(model, state, strict=False)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    # Module.to accepts memory_format at run time; torch's typed overloads of it leave it out.
    model.to(device, memory_format=memory_format)  # type: ignore[call-overload]
    opt = torch.optim.SGD(
        model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=args.weight_decay
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(args.steps, args.warmup))
    precision = resolve_precision(args.precision, device)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    return Parts(model, opt, sched, scaler, precision, memory_format)


def capture(
    parts: Parts, step: int, samples: int, layout: Layout, args: argparse.Namespace
) -> dict[str, Any]:
    """Everything a resume needs, as tensors and plain values only."""
    return {
        "format": 1,
        "run_id": args.run_id,  # a run resumes only its own checkpoints (see resume.py)
        "step": step,
        "samples_seen": samples,
        "world_size": layout.world,
        "global_batch": layout.global_batch,
        "micro_batch": layout.micro,
        "model": plain_state_dict(parts.model),
        "optimizer": parts.optimizer.state_dict(),
        "scheduler": parts.scheduler.state_dict(),
        "scaler": parts.scaler.state_dict(),
        "rng": ckpt.rng_state(),
        "config": {
            "model": args.model,
            "num_classes": args.num_classes,
            "image_size": args.image_size,
            "precision": parts.precision,
            "seed": args.seed,
            "steps": args.steps,
        },
    }


def restore(parts: Parts, state: dict[str, Any]) -> None:
    load_plain_state_dict(parts.model, state["model"])
    parts.optimizer.load_state_dict(state["optimizer"])
    parts.scheduler.load_state_dict(state["scheduler"])
    if state.get("scaler"):
        parts.scaler.load_state_dict(state["scaler"])
    ckpt.set_rng_state(state["rng"])
