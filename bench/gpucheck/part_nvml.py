"""NVML through the agent's own probe (remote_agent/probes/gpu.py): the readings `gpus` and the journals
carry, and the per-process memory by which the agent ties a GPU to a job (`gpus_for_job`)."""

from __future__ import annotations

import time
from typing import Any

from remote_agent.probes.gpu import Nvml

from .context import Context
from .result import PartResult, fail, ok

READINGS = ("util", "mem_used_mib", "mem_total_mib", "temp_c", "power_w")


def reading_text(g: dict[str, Any]) -> str:
    mem = f"{g.get('mem_used_mib')}/{g.get('mem_total_mib')} MiB"
    return f"util {g.get('util')} %, mem {mem}, {g.get('temp_c')} °C, {g.get('power_w')} W"


def readings(ctx: Context) -> PartResult:
    nvml = Nvml()
    try:
        sample = nvml.sample()
    finally:
        nvml.close()
    if not sample.get("available"):
        return fail(
            f"{sample.get('reason')} (the driver is there: is nvidia-ml-py importable? see --pynvml-dir)"
        )
    gpus = sample["gpus"]
    if not gpus:
        return fail("NVML answers but lists no GPU")
    missing = sorted({k for g in gpus for k in READINGS if g.get(k) is None})
    g = gpus[0]
    number = reading_text(g)
    if missing:
        return fail(f"N/A from NVML: {', '.join(missing)}", number, details={"gpus": gpus})
    more = f"{len(gpus)} GPUs, the first shown" if len(gpus) > 1 else ""
    return ok(number, more, details={"gpus": gpus})


def process_memory(ctx: Context) -> PartResult:
    """A process of ours holds 1 GiB and computes: NVML must list its pid with at least that much."""
    held = 1024
    busy = ctx.torch_side("busy", "--mib", str(held), "--seconds", str(max(5, int(ctx.left()))))
    ready = busy.next_object(lambda o: bool(o.get("ready")), timeout=max(1.0, ctx.left() - 8))
    if ready is None:
        return fail(f"the CUDA process never got ready: {busy.stderr_tail() or 'no output'}")
    nvml = Nvml()
    try:
        seen: dict[str, Any] | None = None
        utils: list[int] = []
        listed: set[int] = set()
        for _ in range(6):  # ~3 s: NVML's util is an average over its last sample period
            time.sleep(0.5)
            for g in nvml.sample()["gpus"]:
                listed.update(p["pid"] for p in g["processes"])
                mine = [p for p in g["processes"] if p["pid"] == busy.pid]
                if mine:
                    seen = {"gpu": g["index"], "uuid": g["uuid"], **mine[0]}
                    if g.get("util") is not None:
                        utils.append(g["util"])
        uuids = nvml.gpus_for_job([busy.pid], None)
    finally:
        nvml.close()
    if seen is None:
        why = f"NVML does not list our pid {busy.pid} (it lists {sorted(listed) or 'none'})"
        return fail(f"{why}: a PID namespace? then the agent cannot tie GPUs to jobs by pid here")
    number = f"pid {busy.pid}: {seen['mem_mib']} MiB, util max {max(utils, default=None)} %"
    details = {"process": seen, "utils": utils, "gpus_for_job": uuids}
    if seen["mem_mib"] is None or seen["mem_mib"] < held:
        return fail(
            f"NVML reports {seen['mem_mib']} MiB for a process holding {held} MiB", number, details=details
        )
    if uuids != [seen["uuid"]]:
        return fail(f"gpus_for_job gave {uuids}, expected [{seen['uuid']}]", number, details=details)
    return ok(number, f"gpus_for_job → {seen['uuid']}", details=details)
