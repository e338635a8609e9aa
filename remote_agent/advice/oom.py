"""CUDA out of memory: the traceback in the output, the batch it ran with, the GPU's memory and the
peak the job's NVML samples saw; the seeds' remedies in their order (troubleshooting 5.1: halve
the batch, gradient checkpointing, mixed precision), with gradient accumulation keeping the
effective batch and ZeRO/FSDP last. For the reference trainer, its exact flags."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence

OOM = re.compile(r"torch\.(?:cuda\.)?OutOfMemoryError|CUDA out of memory|CUDA error: out of memory")
# A traceback's source lines are indented (after torchrun's "[rank0]:" prefix, if any): the
# `raise torch.OutOfMemoryError(` line is code, the message line that follows is the evidence.
_CODE = re.compile(r"^(?:\[[^\]]*\]:)?\s{2,}")
_TRIED = re.compile(r"Tried to allocate ([0-9.]+ ?[KMGT]i?B)")
_CAPACITY = re.compile(r"total capacity of ([0-9.]+ ?[KMGT]i?B)|([0-9.]+ ?[KMGT]i?B) total capacity")
_BATCH_FLAGS = (
    "--batch-size",
    "--batch_size",
    "--per-device-train-batch-size",
    "--per_device_train_batch_size",
    "--train-batch-size",
    "--train_batch_size",
    "--bs",
)
TRAINER_DEFAULT_BATCH = 32  # trainer/args.py's --batch-size default


def is_oom(line: str) -> bool:
    return OOM.search(line) is not None and _CODE.match(line) is None


def is_reference_trainer(argv: Sequence[str]) -> bool:
    """`python -m trainer …` (directly, or as torchrun's module)."""
    return any(a == "trainer" and i > 0 and argv[i - 1] == "-m" for i, a in enumerate(argv))


def flag_value(argv: Sequence[str], names: Sequence[str]) -> Optional[str]:
    """The value of the last of these flags on the command line (`--x N` or `--x=N`)."""
    found = None
    for i, a in enumerate(argv):
        for name in names:
            if a == name and i + 1 < len(argv):
                found = argv[i + 1]
            elif a.startswith(name + "="):
                found = a[len(name) + 1 :]
    return found


def batch_size(argv: Sequence[str]) -> Optional[int]:
    value = flag_value(argv, _BATCH_FLAGS)
    if value is not None and value.isdigit():
        return int(value)
    return TRAINER_DEFAULT_BATCH if is_reference_trainer(argv) else None


def advice(line: str, argv: Sequence[str], peak: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The `advice` record for an OOM line; `peak`: uuid -> {index, mem_total_mib, peak_mib}."""
    batch = batch_size(argv)
    evidence: Dict[str, Any] = {"line": line.strip()[:300], "batch_size": batch}
    tried = _TRIED.search(line)
    if tried:
        evidence["tried_to_allocate"] = tried.group(1)
    capacity = _CAPACITY.search(line)
    if capacity:
        evidence["capacity"] = capacity.group(1) or capacity.group(2)
    if peak:
        evidence["gpus"] = [dict(v, uuid=k) for k, v in sorted(peak.items(), key=lambda kv: kv[1]["index"])]
    why = "CUDA out of memory"
    if batch is not None:
        why += " at batch %d" % batch
    for g in evidence.get("gpus", [])[:1]:
        if g.get("mem_total_mib") and g.get("peak_mib") is not None:
            why += "; GPU %s peak %.1f of %.1f GiB" % (
                g["index"],
                g["peak_mib"] / 1024.0,
                g["mem_total_mib"] / 1024.0,
            )
    return {"kind": "oom", "why": why, "evidence": evidence, "remedies": remedies(argv, batch)}


def remedies(argv: Sequence[str], batch: Optional[int]) -> List[str]:
    half = "%d" % max(1, batch // 2) if batch else "half the batch"
    if is_reference_trainer(argv):
        micro = flag_value(argv, ("--micro-batch",))
        per = int(micro) // 2 if micro and micro.isdigit() else None
        return [
            "halve the per-pass batch, accumulating gradients to keep the effective batch: --micro-batch %s "
            "(keeps --batch-size %s)" % (per or half, batch or TRAINER_DEFAULT_BATCH),
            "mixed precision: --precision bf16 (fp16 on GPUs without bf16)",
            "gradient checkpointing: --activation-checkpointing",
            "shard the model's states across GPUs (ZeRO / FSDP): the trainer's DDP keeps a full copy per GPU; "
            "a model that does not fit needs FSDP or DeepSpeed ZeRO",
        ]
    return [
        "halve the batch (to %s) with gradient accumulation over 2 steps, keeping the effective batch" % half,
        "mixed precision: torch.autocast with bf16 (or fp16 with a GradScaler)",
        "gradient checkpointing: torch.utils.checkpoint, or model.gradient_checkpointing_enable() in transformers",
        "shard the optimizer state, gradients and weights across GPUs: ZeRO (DeepSpeed) or FSDP",
    ]
