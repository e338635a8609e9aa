"""Is there an NVIDIA GPU here? Answered without torch, in well under a second.

NVML through the agent's own probe first; the driver's files second, so a GPU host whose Python
lacks nvidia-ml-py is still a GPU host (its NVML parts then fail and say why, the rest runs).
"""

from __future__ import annotations

import glob
import os
from typing import Any

from remote_agent.probes.gpu import Nvml

DRIVER_FILE = "/proc/driver/nvidia/version"


def driver_text() -> str | None:
    try:
        with open(DRIVER_FILE) as f:
            return f.readline().strip() or None
    except OSError:
        return None


def shm_mib() -> int | None:
    """Room in /dev/shm, where DataLoader workers hand batches over (64 MiB in a default container)."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_bavail * st.f_frsize // (1024 * 1024)


def machine() -> dict[str, Any]:
    nvml = Nvml()
    try:
        inventory = nvml.inventory()
    finally:
        nvml.close()
    return {
        "nvml": inventory,
        "driver_file": driver_text(),
        "device_files": sorted(glob.glob("/dev/nvidia[0-9]*")),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "shm_mib": shm_mib(),
    }


def no_gpu_reason(facts: dict[str, Any]) -> str | None:
    """None when this machine has an NVIDIA GPU, else why not (NVML's own words)."""
    if facts["nvml"].get("available") or facts["driver_file"] or facts["device_files"]:
        return None
    why = (facts["nvml"].get("reason") or "").removeprefix("no NVIDIA GPU: ") or "NVML unusable"
    return f"NVML: {why}; no {DRIVER_FILE}, no /dev/nvidia*"


def gpu_line(facts: dict[str, Any]) -> str:
    inv = facts["nvml"]
    names = [g.get("name") or "?" for g in inv.get("gpus", [])]
    if not names:
        return "driver present, NVML unusable"
    first = names[0] if len(set(names)) == 1 else ", ".join(names)
    return f"{len(names)} × {first}, driver {inv.get('driver_version')}, CUDA {inv.get('cuda_version')}"
