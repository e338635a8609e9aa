"""What every part gets: where the repository is, the environment for children, its time limit."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .child import Child

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Context:
    quick: bool
    tmp: Path  # a private directory, removed at the end
    facts: dict[str, Any]  # what detection found (gpu, torch), shared by the parts
    options: dict[str, Any]  # command-line knobs a part reads
    python: str = sys.executable
    deadline: float = 0.0  # monotonic time this part must be done by (set by the runner)
    children: list[Child] = field(default_factory=list)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> Child:
        """A child in the repository root, killed with its group when the part ends, whatever happens."""
        child = Child(argv, str(ROOT), {**os.environ, **(env or {})})
        self.children.append(child)
        return child

    def torch_side(self, *args: str) -> Child:
        return self.spawn([self.python, "-m", "bench.gpucheck.torch_side", *args])

    def kill_children(self) -> None:
        for child in self.children:
            child.kill()
        self.children.clear()
