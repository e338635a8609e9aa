"""NVIDIA GPUs through NVML: inventory, samples, and which GPUs a job uses.

Hardware answers "not available", it does not raise: every NVML call goes through
`Nvml._q`, which turns NVML errors into None. `pynvml` (nvidia-ml-py, bundled in the
zipapp) is imported lazily, so a host without it or without a driver still runs the
agent; the reason is found once, cached, and reported as "no NVIDIA GPU: <reason>".
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple, Type

from .sysinfo import proc_user

MIB = 1024 * 1024
# (index, handle, uuid) of a device NVML answers for; the handle is pynvml's own object.
Device = Tuple[int, Any, Optional[str]]


def _text(value: Any) -> Optional[str]:
    # Older nvidia-ml-py returned bytes for names, UUIDs and versions.
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _mib(n_bytes: Optional[int]) -> Optional[int]:
    return None if n_bytes is None else int(round(n_bytes / MIB))


def _watts(milliwatts: Optional[int]) -> Optional[float]:
    return None if milliwatts is None else round(milliwatts / 1000.0, 1)


def cuda_version_text(version: Optional[int]) -> Optional[str]:
    """NVML's CUDA driver version int (12040) as "12.4"."""
    if version is None:
        return None
    return f"{version // 1000}.{(version % 1000) // 10}"


class Nvml:
    """One NVML session. Thread-safe; init is attempted once and its failure cached."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tried = False
        self._nv: Any = None
        self._errors: Tuple[Type[BaseException], ...] = ()
        self._reason: Optional[str] = None

    # -- init and the one error-swallowing helper -------------------------------

    def _ready(self) -> bool:
        with self._lock:
            if not self._tried:
                self._tried = True
                self._reason = self._init()
            return self._reason is None

    def _init(self) -> Optional[str]:
        """Import pynvml and init NVML; return None on success, else the reason."""
        try:
            import pynvml  # lazy: optional at runtime, bundled in the zipapp
        except Exception as e:  # ImportError, or a pynvml too new for this Python
            return f"pynvml not importable ({type(e).__name__}: {e})"
        errors = [pynvml.NVMLError]
        mismatch = getattr(pynvml, "NVMLLibraryMismatchError", None)
        if mismatch is not None:  # raised by unversioned calls on an old driver
            errors.append(mismatch)
        try:
            pynvml.nvmlInit()
        except tuple(errors) as e:
            return str(e) or type(e).__name__
        self._nv = pynvml
        # AttributeError: a function this pynvml does not have is N/A too.
        self._errors = tuple(errors) + (AttributeError,)
        count = self._q("nvmlDeviceGetCount")
        if not count:
            return "NVML reports no devices"
        return None

    def _q(self, fn: str, *args: Any) -> Any:
        """Call pynvml.<fn>(*args); any NVML error means N/A and gives None."""
        try:
            return getattr(self._nv, fn)(*args)
        except self._errors:
            return None

    def _attr(self, fn: str, handle: Any, attr: str) -> Any:
        obj = self._q(fn, handle)
        return None if obj is None else getattr(obj, attr, None)

    @property
    def available(self) -> bool:
        return self._ready()

    @property
    def reason(self) -> Optional[str]:
        """`no NVIDIA GPU: <why>` when NVML cannot be used, else None."""
        if self._ready():
            return None
        return f"no NVIDIA GPU: {self._reason}"

    def close(self) -> None:
        with self._lock:
            if self._nv is not None:
                with contextlib.suppress(*self._errors):
                    self._nv.nvmlShutdown()
                self._nv = None
            self._tried, self._reason, self._errors = False, None, ()

    # -- devices -----------------------------------------------------------------

    def _handles(self) -> List[Device]:
        """(index, handle, uuid) for every device that answers."""
        out: List[Device] = []
        for i in range(self._q("nvmlDeviceGetCount") or 0):
            h = self._q("nvmlDeviceGetHandleByIndex", i)
            if h is not None:
                out.append((i, h, _text(self._q("nvmlDeviceGetUUID", h))))
        return out

    def _processes(self, handle: Any) -> List[Dict[str, Any]]:
        """Compute + graphics processes on one GPU, one entry per pid."""
        by_pid: Dict[int, Dict[str, Any]] = {}
        for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            for p in self._q(fn, handle) or []:
                pid = int(p.pid)
                mem = _mib(getattr(p, "usedGpuMemory", None))
                seen = by_pid.get(pid)
                if seen is None:
                    by_pid[pid] = {"pid": pid, "user": proc_user(pid), "mem_mib": mem}
                elif mem is not None and (seen["mem_mib"] is None or mem > seen["mem_mib"]):
                    seen["mem_mib"] = mem
        return [by_pid[pid] for pid in sorted(by_pid)]

    def inventory(self) -> Dict[str, Any]:
        """What `hello` reports: driver, CUDA version and the GPUs, or why there are none."""
        if not self._ready():
            return {
                "available": False,
                "reason": self.reason,
                "driver_version": None,
                "cuda_version": None,
                "gpus": [],
            }
        gpus = []
        for i, h, uuid in self._handles():
            gpus.append(
                {
                    "index": i,
                    "uuid": uuid,
                    "name": _text(self._q("nvmlDeviceGetName", h)),
                    "mem_total_mib": _mib(self._attr("nvmlDeviceGetMemoryInfo", h, "total")),
                }
            )
        return {
            "available": True,
            "reason": None,
            "driver_version": _text(self._q("nvmlSystemGetDriverVersion")),
            "cuda_version": cuda_version_text(self._q("nvmlSystemGetCudaDriverVersion")),
            "gpus": gpus,
        }

    def sample(self, processes: bool = True) -> Dict[str, Any]:
        """One reading of every GPU; a field the device does not support is None."""
        if not self._ready():
            return {"available": False, "reason": self.reason, "gpus": []}
        temp_sensor = getattr(self._nv, "NVML_TEMPERATURE_GPU", 0)
        gpus = []
        for i, h, uuid in self._handles():
            mem = self._q("nvmlDeviceGetMemoryInfo", h)
            gpus.append(
                {
                    "index": i,
                    "uuid": uuid,
                    "name": _text(self._q("nvmlDeviceGetName", h)),
                    "util": self._attr("nvmlDeviceGetUtilizationRates", h, "gpu"),
                    "mem_used_mib": _mib(getattr(mem, "used", None)),
                    "mem_total_mib": _mib(getattr(mem, "total", None)),
                    "temp_c": self._q("nvmlDeviceGetTemperature", h, temp_sensor),
                    "power_w": _watts(self._q("nvmlDeviceGetPowerUsage", h)),
                    "power_limit_w": _watts(self._q("nvmlDeviceGetEnforcedPowerLimit", h)),
                    "processes": self._processes(h) if processes else [],
                }
            )
        return {"available": True, "reason": None, "gpus": gpus}

    # -- which GPUs belong to a job -----------------------------------------------

    def gpus_for_job(self, pids: Iterable[int], cuda_visible_devices: Optional[str]) -> List[str]:
        """UUIDs of a job's GPUs, from CUDA_VISIBLE_DEVICES when set, else from its pids.

        CUDA semantics: entries are indices or (prefixes of) GPU/MIG UUIDs, and the first
        entry that matches no device ends the list. Indices are taken in NVML (PCI) order,
        which is CUDA's order under CUDA_DEVICE_ORDER=PCI_BUS_ID (what clusters set).
        """
        if not self._ready():
            return []
        devices = self._handles()
        if cuda_visible_devices is None:
            job_pids: Set[int] = set(pids)
            return [
                uuid
                for _, h, uuid in devices
                if uuid and any(p["pid"] in job_pids for p in self._processes(h))
            ]
        out: List[str] = []
        for entry in cuda_visible_devices.split(","):
            uuid = self._resolve_entry(entry.strip(), devices)
            if uuid is None:
                break
            if uuid not in out:
                out.append(uuid)
        return out

    def _resolve_entry(self, entry: str, devices: List[Device]) -> Optional[str]:
        if not entry:
            return None
        if entry.isdigit():
            idx = int(entry)
            return next((u for i, _, u in devices if i == idx), None)
        if entry.startswith("MIG-"):
            # A MIG instance counts as its parent GPU, which is what NVML samples.
            mig = self._q("nvmlDeviceGetHandleByUUID", entry)
            if mig is None:
                return None
            parent = self._q("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", mig)
            return None if parent is None else _text(self._q("nvmlDeviceGetUUID", parent))
        prefix = entry if entry.startswith("GPU-") else "GPU-" + entry
        matches = [u for _, _, u in devices if u and u.startswith(prefix)]
        return matches[0] if len(matches) == 1 else None


_default: Optional[Nvml] = None
_default_lock = threading.Lock()


def default() -> Nvml:
    """The process-wide NVML session (serve and the supervisor each hold one)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Nvml()
        return _default


def reset() -> None:
    """Forget the cached session and init failure (tests; a driver installed later)."""
    global _default
    with _default_lock:
        old, _default = _default, None
    if old is not None:
        old.close()
