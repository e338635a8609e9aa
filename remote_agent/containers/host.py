"""What this host can run containers with: which runtime, its version, and whether it can pass GPUs.

GPUs are passed only in ways that are known to work: CDI devices for podman (a spec in /etc/cdi or
/var/run/cdi, e.g. `nvidia-ctk cdi generate`), `--gpus` for docker with the NVIDIA hook on PATH.
podman 4.3 accepts `--gpus` and passes nothing, so it is never used: a job would train on the CPU.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
from typing import Any, Dict, List, Optional, Tuple

CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
PREFERRED_KIND = "nvidia.com/gpu"
NVIDIA_HOOK = "nvidia-container-runtime-hook"
VERSION_TIMEOUT = 10.0
_YAML_KIND = re.compile(r'^kind:\s*["\']?([^"\'\s]+)', re.MULTILINE)
_YAML_NAME = re.compile(r'^\s*-\s*name:\s*["\']?([^"\'\s]+)', re.MULTILINE)


class RuntimeMissing(Exception):
    """No container runtime asked for (or none at all) is installed here; the message says which."""


def resolve_runtime(asked: str) -> str:
    """`podman` or `docker` (auto: podman first, it needs no daemon); RuntimeMissing otherwise."""
    names = ("podman", "docker") if asked == "auto" else (asked,)
    for name in names:
        if _which(name):
            return name
    raise RuntimeMissing(
        "no container runtime on this host (install podman or docker)"
        if asked == "auto"
        else "%s is not installed on this host (PATH: %s)" % (asked, os.environ.get("PATH", ""))
    )


def cdi_devices(dirs: Tuple[str, ...] = CDI_DIRS) -> Dict[str, List[str]]:
    """{kind: [device names]} from the CDI spec files (JSON, or the simple YAML nvidia-ctk writes)."""
    found: Dict[str, List[str]] = {}
    for directory in dirs:
        for path in sorted(
            glob.glob(os.path.join(directory, "*.json")) + glob.glob(os.path.join(directory, "*.yaml"))
        ):
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read(1 << 20)
            except OSError:
                continue
            kind, names = _parse_cdi(text)
            if kind:
                found.setdefault(kind, []).extend(n for n in names if n not in found.get(kind, []))
    return found


def _parse_cdi(text: str) -> Tuple[Optional[str], List[str]]:
    try:
        obj = json.loads(text)
    except ValueError:
        kind = _YAML_KIND.search(text)
        return (kind.group(1) if kind else None), _YAML_NAME.findall(text)
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
        return None, []
    devices = obj.get("devices")
    if not isinstance(devices, list):
        devices = []
    return obj["kind"], [
        str(d.get("name")) for d in devices if isinstance(d, dict) and d.get("name") is not None
    ]


def gpu_kind(devices: Dict[str, List[str]]) -> Optional[str]:
    """The CDI kind GPUs are passed as: nvidia.com/gpu, else any other `…/gpu` kind (a test vendor)."""
    if PREFERRED_KIND in devices:
        return PREFERRED_KIND
    kinds = sorted(k for k in devices if k.endswith("/gpu"))
    return kinds[0] if kinds else None


def gpu_passing(runtime: str) -> Tuple[bool, str]:
    """(can pass GPUs, how, or what is missing) for `runtime` on this host."""
    if runtime == "podman":
        kind = gpu_kind(cdi_devices())
        if kind:
            return True, "CDI %s" % kind
        return (
            False,
            "podman passes GPUs only as CDI devices and no CDI spec names a GPU in %s "
            "(run `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`)" % " or ".join(CDI_DIRS),
        )
    if _which(NVIDIA_HOOK):
        return True, "docker --gpus (%s)" % NVIDIA_HOOK
    return (
        False,
        "docker passes GPUs through the NVIDIA Container Toolkit and %s is not on PATH" % NVIDIA_HOOK,
    )


def host_gpu_indices() -> List[str]:
    """The host's NVIDIA GPUs by index, from their device files (no driver call needed)."""
    return sorted(
        (
            p[len("/dev/nvidia") :]
            for p in glob.glob("/dev/nvidia[0-9]*")
            if p[len("/dev/nvidia") :].isdigit()
        ),
        key=int,
    )


def runtime_version(runtime: str) -> Optional[str]:
    try:
        done = subprocess.run(
            [runtime, "--version"], stdin=subprocess.DEVNULL, capture_output=True, timeout=VERSION_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.decode("utf-8", "replace").replace(",", " ").split()
    return next((w for w in words if w[:1].isdigit()), None) if done.returncode == 0 else None


def runtimes_report() -> Dict[str, Any]:
    """For `hosts check`: each runtime's version (null: not installed) and how it passes GPUs."""
    out: Dict[str, Any] = {}
    for name in ("podman", "docker"):
        if not _which(name):
            out[name] = None
            continue
        ok, how = gpu_passing(name)
        out[name] = {"version": runtime_version(name), "gpus": ok, "gpus_how": how}
    return out


def _which(name: str) -> Optional[str]:
    import shutil  # here: a supervisor imports this module; shutil loads bz2 and lzma

    return shutil.which(name)
