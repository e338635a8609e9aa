"""A starving data loader: the job's GPUs busy only now and then (mean utilisation under LOW_PCT
over the window, but not idle) while its CPU is saturated (the busiest process wanting SATURATED of
a core, or the tree SATURATED of the cores it may use: running or queued to run, probes/jobcpu.py). Judged only once training is under way
(two steps seen), so start-up's imports, compiles and data checks never count. The seeds'
remedies (troubleshooting 5.3): num_workers at 2-4 x the CPU cores per GPU, pin_memory,
prefetch_factor, a faster image decoder, data preloaded to a RAM disk."""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

from .oom import flag_value, is_reference_trainer

LOW_PCT = 50.0
SATURATED = 0.8  # of one core (busiest process) or of every core the job may use (the tree)
STEPS = 2  # steps seen before the loader is judged (start-up is not training)
WINDOW = 6  # samples (at the spec's gpu_interval, 10 s by default: a minute)


class LoaderJudge:
    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.window: Deque[Tuple[float, float, float]] = deque(maxlen=WINDOW)  # (util mean, tree, busiest)

    def sample(
        self, utils: List[Optional[int]], cpu: Optional[Tuple[float, float]], cores: int, steps: int
    ) -> Optional[Dict[str, Any]]:
        known = [u for u in utils if isinstance(u, (int, float))]
        if steps < STEPS or not known or cpu is None:
            self.window.clear()  # only consecutive samples of a run under way count
            return None
        self.window.append((sum(known) / len(known), cpu[0], cpu[1]))
        if len(self.window) < WINDOW:
            return None
        util = [w[0] for w in self.window]
        import statistics  # here: an idle supervisor need not load it (and decimal, fractions)

        tree = statistics.median(w[1] for w in self.window)
        busiest = statistics.median(w[2] for w in self.window)
        mean = sum(util) / len(util)
        saturated = busiest >= SATURATED or tree >= SATURATED * cores
        if mean >= LOW_PCT or max(util) <= 0 or not saturated:
            return None
        gpus = max(1, len(known))
        evidence = {
            "gpu_util_pct": [round(u, 1) for u in util],
            "gpu_util_mean_pct": round(mean, 1),
            "cpu_cores_busy": round(tree, 2),
            "busiest_process_cores": round(busiest, 2),
            "cores": cores,
            "gpus": gpus,
            "num_workers": _workers(self.argv),
        }
        why = (
            "data loader starving the GPU: GPU %.0f %% (%.0f-%.0f) while the job's CPU is saturated (%.1f of %d cores)"
            % (
                mean,
                min(util),
                max(util),
                tree,
                cores,
            )
        )
        return {
            "kind": "loader",
            "why": why,
            "evidence": evidence,
            "remedies": remedies(self.argv, cores, gpus),
        }


def _workers(argv: Sequence[str]) -> Optional[int]:
    value = flag_value(argv, ("--workers", "--num-workers", "--num_workers", "--dataloader-num-workers"))
    return int(value) if value is not None and value.isdigit() else None


def remedies(argv: Sequence[str], cores: int, gpus: int) -> List[str]:
    per_gpu = max(1, cores // gpus)
    low, high = 2 * per_gpu, 4 * per_gpu
    trainer = is_reference_trainer(argv)
    workers = "raise the DataLoader's num_workers to %d-%d (the seeds: 2-4 x the %d CPU cores per GPU)" % (
        low,
        high,
        per_gpu,
    )
    if trainer:
        workers += ": --workers %d" % low
    return [
        workers,
        "pin_memory=True: page-locked batches copy to the GPU asynchronously",
        "prefetch_factor=4 (batches each worker loads ahead)" + (": --prefetch 4" if trainer else ""),
        "a faster image decoder (TurboJPEG, pillow-simd, DALI on the GPU) instead of Pillow",
        "preload the data set into memory or a RAM disk (/dev/shm)",
    ]
