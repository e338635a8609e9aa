"""GPU health for a job: errors new on its GPUs since the job began (XID critical errors, ECC
counts above the first look's). The record names each GPU and what it raised; the remedies take
the GPU out of use and get it checked."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..probes.gpuhealth import flag


class HealthJudge:
    def __init__(self) -> None:
        self.baseline: Dict[str, Dict[str, Any]] = {}
        self.flagged: Dict[str, str] = {}  # uuid -> what was said

    def look(self, health: Dict[str, Dict[str, Any]], uuids: List[str]) -> Optional[Dict[str, Any]]:
        """The advice when one of the job's GPUs shows errors it had not shown before (each GPU once)."""
        new: List[Dict[str, Any]] = []
        for uuid in uuids:
            now = health.get(uuid)
            if now is None:
                continue
            base = self.baseline.setdefault(uuid, {"xid": [], "ecc": now.get("ecc") or {}})
            said = flag(now, base)
            if said and uuid not in self.flagged:
                self.flagged[uuid] = said
                new.append(
                    {
                        "uuid": uuid,
                        "index": now.get("index"),
                        "errors": said,
                        "xid": now.get("xid") or [],
                        "ecc": now.get("ecc") or {},
                    }
                )
        if not new:
            return None
        why = "; ".join("GPU %s: %s" % (g["index"], g["errors"]) for g in new)
        indices = ",".join(str(g["index"]) for g in new)
        return {
            "kind": "gpu_health",
            "why": why,
            "evidence": {"gpus": new},
            "remedies": [
                "take GPU %s out of use: run the job on the other GPUs (CUDA_VISIBLE_DEVICES, or --gpus on "
                "another host) and resume from the last checkpoint" % indices,
                "check it: nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT on the host (and dmesg for NVRM: Xid)",
                "reset the GPU (nvidia-smi -r -i %s) or reboot the host; a rented instance: ask the provider to "
                "replace it" % indices,
            ],
        }
