"""The parts in the order they run, each with its time limit (full run, --quick)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .context import Context
from .part_agent import agent_job
from .part_container import container_job
from .part_nvml import process_memory, readings
from .part_torch import torch_probe
from .part_train import bare_resnet50, oom_backoff, trainer_resnet50
from .result import PartResult


@dataclass(frozen=True)
class Part:
    name: str
    run: Callable[[Context], PartResult]
    needs_cuda: bool
    limit: float  # seconds
    quick_limit: float

    def seconds(self, quick: bool) -> float:
        return self.quick_limit if quick else self.limit


PARTS = (
    Part("nvml", readings, False, 20, 15),
    Part("torch", torch_probe, False, 60, 40),
    Part("nvml_process", process_memory, True, 60, 35),
    Part("agent_job", agent_job, True, 90, 45),
    Part("container", container_job, False, 90, 30),
    Part("trainer_resnet50", trainer_resnet50, True, 150, 70),
    Part("oom_backoff", oom_backoff, True, 120, 60),
    Part("bare_resnet50", bare_resnet50, True, 90, 40),
)
NAMES = tuple(p.name for p in PARTS)
