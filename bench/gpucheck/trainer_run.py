"""`python -m trainer` as a child of the check, with NVML's util sampled meanwhile (is the GPU fed?)."""

from __future__ import annotations

import statistics
import threading
from dataclasses import dataclass, field
from typing import Any

from remote_agent.probes.gpu import Nvml

from .context import Context


@dataclass
class TrainerRun:
    rc: int | None  # None: still running at the part's limit (then killed)
    objects: list[dict[str, Any]]
    stderr: str
    utils: list[int] = field(default_factory=list)  # GPU 0's util, 2 Hz, after the first metric line

    def events(self, name: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o.get("event") == name]

    def rates(self) -> list[float]:
        return [o["samples_per_sec"] for o in self.objects if "samples_per_sec" in o]

    def steady_rate(self) -> float | None:
        """Images/s after the first window (start-up, cuDNN's first calls): total samples over total time."""
        later = self.rates()[1:]
        return statistics.harmonic_mean(later) if later else None

    def why(self) -> str:
        if self.rc is None:
            return f"still running at the limit after {len(self.rates())} windows"
        return f"exit {self.rc}: {self.stderr or 'no stderr'}"


def run_trainer(ctx: Context, args: list[str], margin: float = 5.0) -> TrainerRun:
    """Run it to the end, or until `margin` s before the part's limit."""
    child = ctx.spawn([ctx.python, "-m", "trainer", *args], env={"PYTHONUNBUFFERED": "1"})
    utils: list[int] = []
    started = threading.Event()
    done = threading.Event()

    def sample() -> None:
        nvml = Nvml()
        try:
            started.wait()
            while not done.wait(0.5):
                gpus = nvml.sample(processes=False).get("gpus") or []
                if gpus and gpus[0].get("util") is not None:
                    utils.append(gpus[0]["util"])
        finally:
            nvml.close()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    child.next_object(lambda o: "samples_per_sec" in o, timeout=max(1.0, ctx.left() - margin))
    started.set()
    rc = child.wait(ctx.left() - margin)
    done.set()
    started.set()
    sampler.join(timeout=5)
    if rc is None:
        child.kill()
    return TrainerRun(rc, list(child.objects), child.stderr_tail(), utils)
