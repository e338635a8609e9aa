"""GPU readings for one job's GPUs, for its journal's periodic `gpu` records."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Set

from .gpu import Nvml

_nvml: Optional[Nvml] = None


def session() -> Nvml:
    """The NVML session the job's samples use (its health probe registers its events on it)."""
    global _nvml
    if _nvml is None:
        _nvml = Nvml()
    return _nvml


def sample_job_gpus(tree: Set[int], spec: Mapping[str, Any]) -> Optional[List[Dict[str, Any]]]:
    """None when the host has no usable NVML; else a reading per GPU the job uses."""
    nvml = session()
    sample = nvml.sample()
    if not sample.get("available"):
        return None
    visible = (spec.get("env") or {}).get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    uuids = set(nvml.gpus_for_job(tree, visible))
    keep = ("uuid", "index", "util", "mem_used_mib", "mem_total_mib", "temp_c", "power_w")
    return [{k: g.get(k) for k in keep} for g in sample.get("gpus", []) if g.get("uuid") in uuids]
