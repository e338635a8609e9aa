"""GPU health from NVML: ECC error counters (volatile: since the driver loaded; aggregate: the
GPU's lifetime; corrected and uncorrected) and XID critical-error events. Events come through an
event set registered once per NVML session (nvmlDeviceRegisterEvents with
nvmlEventTypeXidCriticalError) and drained without blocking (nvmlEventSetWait with a 0 ms
timeout): a session sees the XIDs raised after it registered. Anything NVML cannot answer is
left out (a GPU without ECC has no counts), never raised."""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional

from .gpu import Nvml, _text

XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
MAX_EVENTS = 64  # drained per look: a storm of XIDs must not hold the loop
KEPT_XIDS = 20  # per GPU
_COUNTERS = (("volatile", 0), ("aggregate", 1))  # NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC
_TYPES = (("corrected", 0), ("uncorrected", 1))  # NVML_MEMORY_ERROR_TYPE_*

# Meanings of the XIDs seen most on training machines (NVIDIA's XID catalogue).
XID_MEANING = {
    13: "graphics engine exception (often the application)",
    31: "GPU memory page fault (often the application)",
    43: "GPU stopped processing (often the application)",
    45: "preemptive cleanup after an earlier error",
    48: "double-bit ECC error",
    63: "ECC page retirement or row remapping",
    64: "ECC page retirement or row remapping failed",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
}


class HealthProbe:
    """One per NVML session user (serve, a supervisor): holds its event set and the XIDs it saw."""

    def __init__(self, nvml: Nvml) -> None:
        self.nvml = nvml
        self._lock = threading.Lock()
        self._set: Any = None
        self._registered = False
        self.xids: Dict[str, List[int]] = {}  # uuid -> XIDs seen since registration

    def _register(self) -> None:
        self._registered = True
        nv = self.nvml
        event_set = nv._q("nvmlEventSetCreate")
        if event_set is None:
            return
        for _, handle, _uuid in nv._handles():
            nv._q("nvmlDeviceRegisterEvents", handle, XID_EVENT, event_set)
        self._set = event_set

    def _drain(self) -> None:
        nv = self.nvml
        for _ in range(MAX_EVENTS):
            event = nv._q("nvmlEventSetWait", self._set, 0)  # a timeout (no event) is None
            if event is None:
                return
            if getattr(event, "eventType", XID_EVENT) != XID_EVENT:
                continue
            uuid = _text(nv._q("nvmlDeviceGetUUID", getattr(event, "device", None)))
            if uuid:
                seen = self.xids.setdefault(uuid, [])
                seen.append(int(getattr(event, "eventData", 0)))
                del seen[:-KEPT_XIDS]

    def look(self) -> Optional[Dict[str, Dict[str, Any]]]:
        """uuid -> {index, ecc: {volatile: {corrected, uncorrected}, aggregate: {…}}, xid: [...]};
        None when NVML is not usable here."""
        if not self.nvml.available:
            return None
        nv = self.nvml
        with self._lock:
            if not self._registered:
                self._register()
            if self._set is not None:
                self._drain()
            out: Dict[str, Dict[str, Any]] = {}
            for index, handle, uuid in nv._handles():
                if not uuid:
                    continue
                ecc: Dict[str, Dict[str, int]] = {}
                for counter, c in _COUNTERS:
                    for name, t in _TYPES:
                        n = nv._q("nvmlDeviceGetTotalEccErrors", handle, t, c)
                        if isinstance(n, int):
                            ecc.setdefault(counter, {})[name] = n
                out[uuid] = {"index": index, "ecc": ecc, "xid": list(self.xids.get(uuid, []))}
            return out


def describe_xid(xid: int) -> str:
    meaning = XID_MEANING.get(xid)
    return "XID %d (%s)" % (xid, meaning) if meaning else "XID %d" % xid


def flag(
    health: Dict[str, Any], since: Optional[Dict[str, Any]] = None, corrected: bool = True
) -> Optional[str]:
    """One line for a GPU with errors new since `since` (a previous look; None: since the driver
    loaded, i.e. volatile counts and the session's XIDs), else None. `corrected`: corrected ECC
    errors count too (a job's new ones do; a host's since boot alone are no alarm)."""
    parts: List[str] = []
    xids = list(health.get("xid") or [])
    if since is not None:
        xids = xids[len(since.get("xid") or []) :]
    if xids:
        parts.append(", ".join(describe_xid(x) for x in sorted(set(xids))))
    vol = (health.get("ecc") or {}).get("volatile") or {}
    before = ((since or {}).get("ecc") or {}).get("volatile") or {}
    for name in ("uncorrected", "corrected") if corrected else ("uncorrected",):
        new = int(vol.get(name, 0)) - int(before.get(name, 0))
        if new > 0:
            parts.append("%d %s ECC error%s" % (new, name, "" if new == 1 else "s"))
    return "; ".join(parts) if parts else None


def with_health(sample: Dict[str, Any], probe: HealthProbe) -> Dict[str, Any]:
    """The `gpus` op's sample with each GPU's `health`: {xid, ecc, flag} (flag: the XIDs this
    serve saw and the uncorrected ECC errors since the driver loaded, one line, or null)."""
    try:
        looked = probe.look()
    except Exception:  # a probe's bug must never take the gpus answer down
        looked = None
    if not looked:
        return sample
    gpus = []
    for g in sample.get("gpus", []):
        h = looked.get(str(g.get("uuid")))
        if h is not None:
            g = dict(g, health={"xid": h["xid"], "ecc": h["ecc"], "flag": flag(h, corrected=False)})
        gpus.append(g)
    return dict(sample, gpus=gpus)
