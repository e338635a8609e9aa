"""`gpudeck hosts [--json]`: every host, reachable or why not, its agent, GPUs and clock offset."""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import CliError
from ..format import table
from ..session import Session


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hosts", help="list hosts: reachable or why not, agent version, GPUs, clock offset")
    p.add_argument("--json", action="store_true")


def probe(session: Session, host: str) -> dict[str, Any]:
    sent = time.time()
    try:
        hello = session.request(host, "hello", timeout=30.0)
    except CliError as exc:
        return {"name": host, "reachable": False, "error": str(exc)}
    received = time.time()
    gpu = hello.get("gpu") or {}
    return {
        "name": host,
        "reachable": True,
        "hostname": hello.get("hostname"),
        "agent_version": hello.get("agent_version"),
        "os": hello.get("os"),
        "cpu_count": hello.get("cpu_count"),
        "ram_total_mib": hello.get("ram_total_mib"),
        "gpus": gpu.get("gpus") or [],
        "gpu_reason": gpu.get("reason"),
        "driver_version": gpu.get("driver_version"),
        "cuda_version": gpu.get("cuda_version"),
        # The host's clock against ours, taking the request's midpoint as the moment it answered.
        "clock_offset_s": round(hello["time"] - (sent + received) / 2, 3) if isinstance(hello.get("time"), (int, float)) else None,
    }


def run(args: argparse.Namespace, session: Session) -> int:
    hosts = session.hosts()
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
        results = list(pool.map(lambda h: probe(session, h), hosts))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    rows = []
    for r in results:
        if not r["reachable"]:
            rows.append([r["name"], "unreachable", "-", r["error"], "-"])
            continue
        gpus = ", ".join(f"{g.get('index')}:{g.get('name')}" for g in r["gpus"]) or (r["gpu_reason"] or "no GPU")
        rows.append([r["name"], "ok", r["agent_version"] or "?", gpus, f"{r['clock_offset_s']:+.3f}s"])
    print(table(["HOST", "STATUS", "AGENT", "GPUS", "CLOCK"], rows))
    return 0
