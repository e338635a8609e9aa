"""A stand-in for nvidia-ml-py's `pynvml` module: same names, types and units.

Hardware is the one thing the tests fake. In-process: load a fresh copy of this file per
test (its state lives in module globals, like the real binding's), put it in
sys.modules["pynvml"], then set `GPUS`, `FAIL` and `INIT_ERROR`. In a subprocess: put this
directory first on PYTHONPATH and describe the GPUs in $PYNVML_FAKE (or the file $PYNVML_FAKE_FILE; see `_from_env`), and the
processes that hold them later in the file $PYNVML_FAKE_PROCS names (`_held_from_file`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from types import SimpleNamespace

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_TEMPERATURE_GPU = 0
NVML_ERROR_TIMEOUT = 10
nvmlEventTypeXidCriticalError = 0x8
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1

_STRINGS = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_TIMEOUT: "Timeout",
}


class NVMLLibraryMismatchError(Exception):
    pass


class NVMLError(Exception):
    """Like the real one: NVMLError(code) builds the matching subclass."""

    _valClassMapping: dict[int, type] = {}

    def __new__(cls, value: int):
        if cls is NVMLError:
            cls = NVMLError._valClassMapping.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return _STRINGS.get(self.value, f"NVML Error with code {self.value}")


def _error_class(name: str, code: int) -> type:
    cls = type(name, (NVMLError,), {"__new__": lambda typ, *a: NVMLError.__new__(typ, code)})
    NVMLError._valClassMapping[code] = cls
    return cls


NVMLError_Uninitialized = _error_class("NVMLError_Uninitialized", NVML_ERROR_UNINITIALIZED)
NVMLError_InvalidArgument = _error_class("NVMLError_InvalidArgument", NVML_ERROR_INVALID_ARGUMENT)
NVMLError_NotSupported = _error_class("NVMLError_NotSupported", NVML_ERROR_NOT_SUPPORTED)
NVMLError_NoPermission = _error_class("NVMLError_NoPermission", NVML_ERROR_NO_PERMISSION)
NVMLError_NotFound = _error_class("NVMLError_NotFound", NVML_ERROR_NOT_FOUND)
NVMLError_DriverNotLoaded = _error_class("NVMLError_DriverNotLoaded", NVML_ERROR_DRIVER_NOT_LOADED)
NVMLError_LibraryNotFound = _error_class("NVMLError_LibraryNotFound", NVML_ERROR_LIBRARY_NOT_FOUND)
NVMLError_FunctionNotFound = _error_class("NVMLError_FunctionNotFound", NVML_ERROR_FUNCTION_NOT_FOUND)
NVMLError_GpuIsLost = _error_class("NVMLError_GpuIsLost", NVML_ERROR_GPU_IS_LOST)
NVMLError_Timeout = _error_class("NVMLError_Timeout", NVML_ERROR_TIMEOUT)


@dataclass
class FakeGpu:
    uuid: str
    name: str = "NVIDIA A100-SXM4-80GB"
    mem_total: int = 80 * 1024**3  # bytes
    mem_used: int = 0
    util: int = 0  # percent
    temp: int = 35  # °C
    power_mw: int = 60_000
    limit_mw: int = 400_000
    compute: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, bytes or None)
    graphics: list[tuple[int, int | None]] = field(default_factory=list)
    migs: list[str] = field(default_factory=list)  # MIG-… UUIDs carved from this GPU


@dataclass(frozen=True)
class _Handle:
    index: int
    mig: str | None = None


GPUS: list[FakeGpu] = []
FAIL: dict[tuple[str, int | None], int] = {}  # (function, gpu index or None for any) → error code
INIT_ERROR: int | None = None  # e.g. NVML_ERROR_DRIVER_NOT_LOADED
DRIVER_VERSION = "550.54.15"
CUDA_DRIVER_VERSION = 12040
CALLS: list[str] = []
_initialized = False


def _check(fn: str, handle: _Handle | None = None) -> FakeGpu | None:
    CALLS.append(fn)
    if not _initialized:
        raise NVMLError(NVML_ERROR_UNINITIALIZED)
    index = None if handle is None else handle.index
    for key in ((fn, index), (fn, None)):
        if key in FAIL:
            raise NVMLError(FAIL[key])
    return None if handle is None else GPUS[handle.index]


def nvmlInit() -> None:
    global _initialized
    CALLS.append("nvmlInit")
    if INIT_ERROR is not None:
        raise NVMLError(INIT_ERROR)
    _initialized = True


def nvmlShutdown() -> None:
    global _initialized
    _check("nvmlShutdown")
    _initialized = False


def nvmlSystemGetDriverVersion() -> str:
    _check("nvmlSystemGetDriverVersion")
    return DRIVER_VERSION


def nvmlSystemGetCudaDriverVersion() -> int:
    _check("nvmlSystemGetCudaDriverVersion")
    return CUDA_DRIVER_VERSION


def nvmlDeviceGetCount() -> int:
    _check("nvmlDeviceGetCount")
    return len(GPUS)


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    _check("nvmlDeviceGetHandleByIndex")
    if not 0 <= index < len(GPUS):
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return _Handle(index)


def nvmlDeviceGetHandleByUUID(uuid: str) -> _Handle:
    _check("nvmlDeviceGetHandleByUUID")
    for i, g in enumerate(GPUS):
        if g.uuid == uuid:
            return _Handle(i)
        if uuid in g.migs:
            return _Handle(i, mig=uuid)
    raise NVMLError(NVML_ERROR_NOT_FOUND)


def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig: _Handle) -> _Handle:
    _check("nvmlDeviceGetDeviceHandleFromMigDeviceHandle")
    if mig.mig is None:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return _Handle(mig.index)


def nvmlDeviceGetUUID(handle: _Handle) -> str:
    g = _check("nvmlDeviceGetUUID", handle)
    return handle.mig or g.uuid


def nvmlDeviceGetName(handle: _Handle) -> str:
    return _check("nvmlDeviceGetName", handle).name


def nvmlDeviceGetMemoryInfo(handle: _Handle, version: int | None = None) -> SimpleNamespace:
    g = _check("nvmlDeviceGetMemoryInfo", handle)
    return SimpleNamespace(total=g.mem_total, used=g.mem_used, free=g.mem_total - g.mem_used)


def nvmlDeviceGetUtilizationRates(handle: _Handle) -> SimpleNamespace:
    return SimpleNamespace(gpu=_check("nvmlDeviceGetUtilizationRates", handle).util, memory=0)


def nvmlDeviceGetTemperature(handle: _Handle, sensor: int) -> int:
    g = _check("nvmlDeviceGetTemperature", handle)
    if sensor != NVML_TEMPERATURE_GPU:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return g.temp


def nvmlDeviceGetPowerUsage(handle: _Handle) -> int:
    return _check("nvmlDeviceGetPowerUsage", handle).power_mw


def nvmlDeviceGetEnforcedPowerLimit(handle: _Handle) -> int:
    return _check("nvmlDeviceGetEnforcedPowerLimit", handle).limit_mw


def _procs(entries: list[tuple[int, int | None]]) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(pid=pid, usedGpuMemory=mem, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
        for pid, mem in entries
    ]


def nvmlDeviceGetComputeRunningProcesses(handle: _Handle) -> list[SimpleNamespace]:
    g = _check("nvmlDeviceGetComputeRunningProcesses", handle)
    return _procs(g.compute + _held_from_file(handle.index))


def _held_from_file(index: int) -> list[tuple[int, int | None]]:
    """Compute processes a test makes "hold" a GPU while the agent runs: $PYNVML_FAKE_PROCS names a
    JSON file {"<gpu index>": [[pid, bytes], ...]}, read on every call; a dead pid (gone or a
    zombie) drops out, as it does from the real driver's list."""
    path = os.environ.get("PYNVML_FAKE_PROCS")
    if not path:
        return []
    try:
        with open(path) as f:
            entries = json.load(f).get(str(index), [])
    except (OSError, ValueError):
        return []
    return [(int(pid), mem) for pid, mem in entries if _alive(int(pid))]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def nvmlDeviceGetGraphicsRunningProcesses(handle: _Handle) -> list[SimpleNamespace]:
    return _procs(_check("nvmlDeviceGetGraphicsRunningProcesses", handle).graphics)


# GPU health (XID events, ECC counts) comes from a file the test writes while the agent runs:
# $PYNVML_FAKE_HEALTH = {"<uuid>": {"xid": [79, …], "ecc": {"volatile": {"corrected": 0,
# "uncorrected": 2}, "aggregate": {…}}}}, read at each call. An event set sees the XIDs appended
# after its registration, as NVML's does; a GPU without "ecc" answers Not Supported.


def _health(uuid: str) -> dict:
    path = os.environ.get("PYNVML_FAKE_HEALTH")
    try:
        with open(path or "", encoding="utf-8") as f:
            got = json.load(f).get(uuid)
    except (OSError, ValueError, AttributeError):
        return {}
    return got if isinstance(got, dict) else {}


def nvmlDeviceGetTotalEccErrors(handle: _Handle, error_type: int, counter_type: int) -> int:
    g = _check("nvmlDeviceGetTotalEccErrors", handle)
    ecc = _health(g.uuid).get("ecc")
    if not isinstance(ecc, dict):
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    counter = ecc.get("volatile" if counter_type == NVML_VOLATILE_ECC else "aggregate") or {}
    return int(
        counter.get("uncorrected" if error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED else "corrected", 0)
    )


@dataclass
class _EventSet:
    seen: dict[int, int] = field(default_factory=dict)  # GPU index -> XIDs already handed out


def nvmlEventSetCreate() -> _EventSet:
    _check("nvmlEventSetCreate")
    return _EventSet()


def nvmlDeviceRegisterEvents(handle: _Handle, event_types: int, event_set: _EventSet) -> None:
    g = _check("nvmlDeviceRegisterEvents", handle)
    if event_types & nvmlEventTypeXidCriticalError:
        event_set.seen[handle.index] = len(_health(g.uuid).get("xid") or [])


def nvmlEventSetWait(event_set: _EventSet, timeout_ms: int) -> SimpleNamespace:
    _check("nvmlEventSetWait")
    for index, seen in sorted(event_set.seen.items()):
        xids = _health(GPUS[index].uuid).get("xid") or []
        if len(xids) > seen:
            event_set.seen[index] = seen + 1
            return SimpleNamespace(
                device=_Handle(index),
                eventType=nvmlEventTypeXidCriticalError,
                eventData=int(xids[seen]),
                gpuInstanceId=0xFFFFFFFF,
                computeInstanceId=0xFFFFFFFF,
            )
    raise NVMLError(NVML_ERROR_TIMEOUT)


def nvmlEventSetFree(event_set: _EventSet) -> None:
    _check("nvmlEventSetFree")


def _from_env() -> None:
    """Shape the machine from $PYNVML_FAKE (JSON list of FakeGpu fields) for subprocess tests."""
    raw = os.environ.get("PYNVML_FAKE")
    if not raw and os.environ.get("PYNVML_FAKE_FILE"):  # where a value cannot be quoted (sshd's SetEnv)
        with open(os.environ["PYNVML_FAKE_FILE"]) as f:
            # `{node}`: the Slurm compute node it runs on, so each node's GPUs have UUIDs of their own
            raw = f.read().replace("{node}", os.environ.get("SLURMD_NODENAME", "node"))
    if raw:
        GPUS.extend(
            FakeGpu(**{k: [tuple(p) for p in v] if k in ("compute", "graphics") else v for k, v in g.items()})
            for g in json.loads(raw)
        )


_from_env()
