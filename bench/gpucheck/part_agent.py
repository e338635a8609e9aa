"""A job launched through gpudeck's agent on this machine: its GPU samples must reach its journal.

Two jobs at once, each a CUDA process: one the agent must tie to the GPU by its pids (NVML's process
list), one by its CUDA_VISIBLE_DEVICES. A container or a PID namespace breaks only the first.
"""

from __future__ import annotations

import time
from typing import Any

from .context import ROOT, Context
from .local_agent import TERMINAL, LocalAgent
from .result import PartResult, fail, ok

WAYS = {"by pid": {}, "by CUDA_VISIBLE_DEVICES": {"CUDA_VISIBLE_DEVICES": "0"}}


def gpu_records(agent: LocalAgent, job_id: str) -> list[dict[str, Any]]:
    """The job's `gpu` records that show memory in use (the job's own allocation is in it)."""
    gpu = [r for r in agent.journal(job_id) if r.get("kind") == "gpu"]
    return [r for r in gpu if any((g.get("mem_used_mib") or 0) > 0 for g in r.get("gpus") or [])]


def watch_jobs(ctx: Context, argv: list[str], ways: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Launch one job per way, wait (within the part's time) until each has a gpu record or ended."""
    found: dict[str, Any] = {}
    with LocalAgent(ctx.tmp / "gpudeck-home") as agent:
        jobs = {}
        for i, (way, env) in enumerate(ways.items()):
            jobs[way] = agent.launch(f"gpucheck-{i}", argv, str(ROOT), env=env, gpu_interval=0.5)
        while len(found) < len(jobs) and ctx.left() > 4:
            time.sleep(0.5)
            for way, job_id in jobs.items():
                if way in found:
                    continue
                records = gpu_records(agent, job_id)
                if records:
                    found[way] = {"job": job_id, "records": len(records), "first": records[0]["gpus"]}
                elif agent.state(job_id) in TERMINAL:
                    found[way] = {"job": job_id, "ended": agent.state(job_id), "output": agent.output(job_id)}
        for way, job_id in jobs.items():
            found.setdefault(
                way, {"job": job_id, "state": agent.state(job_id), "output": agent.output(job_id)}
            )
            agent.kill(job_id)
    return found


def agent_job(ctx: Context) -> PartResult:
    seconds = str(max(10, int(ctx.left())))
    argv = [ctx.python, "-m", "bench.gpucheck.torch_side", "busy", "--mib", "512", "--seconds", seconds]
    found = watch_jobs(ctx, argv, WAYS)
    good = {way: f for way, f in found.items() if "records" in f}
    if not good:
        return fail(f"no gpu record in any job's journal: {describe(found)}", details=found)
    first = next(iter(good.values()))["first"][0]
    number = f"util {first.get('util')} %, mem {first.get('mem_used_mib')} MiB"
    if len(good) < len(found):
        missing = describe({w: f for w, f in found.items() if w not in good})
        return fail(f"no gpu record {missing}", number, details=found)
    counts = "; ".join(f"{way}: {f['records']} gpu records" for way, f in good.items())
    return ok(number, counts, details=found)


def describe(found: dict[str, Any]) -> str:
    parts = []
    for way, f in found.items():
        why = f"ended {f['ended']}" if "ended" in f else f"still {f.get('state')}"
        tail = " ".join(f.get("output", "").split())[-200:]
        parts.append(f"{way} ({why}{': ' + tail if tail else ''})")
    return "; ".join(parts)
