"""A resize's pre-flight for gpudeck's reference trainer (issue 29, finding 12): its `--batch-size`
is the global batch of all ranks together and must divide by the world size (nodes × processes per
node), or every rank of the new job fails at once. gpudeck keeps the global batch exact (a resumed
run sees the same samples in the same order) rather than letting the trainer round it per rank, so
a resize whose world size does not divide the batch is refused before anything stops."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import EXIT_USAGE, GpudeckError

TRAINER_MODULES = ("trainer", "trainer.torchrun", "trainer.direct_launch")
DEFAULT_BATCH = 32  # trainer/args.py's --batch-size default


def trainer_batch(command: Sequence[str]) -> int | None:
    """The global batch the reference trainer runs with, or None: not the reference trainer, or a
    batch that is not a number (the trainer says so itself)."""
    if not any(a == "-m" and b in TRAINER_MODULES for a, b in zip(command, command[1:], strict=False)):
        return None
    value: str | None = None
    for i, arg in enumerate(command):
        if arg == "--batch-size" and i + 1 < len(command):
            value = command[i + 1]
        elif arg.startswith("--batch-size="):
            value = arg.split("=", 1)[1]
    if value is None:
        return DEFAULT_BATCH
    return int(value) if value.isdigit() else None


def check_batch_fits(verb: str, command: Sequence[str], nodes: int, nproc_per_node: int) -> None:
    batch = trainer_batch(command)
    world = nodes * nproc_per_node
    if batch is None or batch % world == 0:
        return
    fits = [n for n in range(1, min(batch, 128) + 1) if batch % (n * nproc_per_node) == 0]
    raise GpudeckError(
        f"{verb}: the trainer's --batch-size {batch} is not divisible by the new world size {world} "
        f"({nodes} nodes × {nproc_per_node} processes): nothing was stopped; node counts that fit: "
        f"{', '.join(map(str, fits)) or 'none'}",
        EXIT_USAGE,
    )
