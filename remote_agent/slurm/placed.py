"""Whether a job's spec places it through Slurm: asked of every job a listing folds, so apart from
slurm/states.py (squeue, sacct, its journal writes), which only a Slurm job's fold needs."""

from __future__ import annotations

from typing import Any


def is_slurm(spec: Any) -> bool:
    return isinstance(spec, dict) and isinstance(spec.get("placement"), dict)
