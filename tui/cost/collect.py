"""Gathers what the counters need from the hosts: clock offset, GPUs, job objects, whole journals.

Blocking (agent requests): the CLI calls it directly, the TUI from a thread worker. The `client`
is anything with `request(op, timeout=…, **args)`, `tail(job, node, since_seq)`, `untail(job, node)`
and an `events` queue of (job, node, records): AgentClient and ReconnectingClient both are.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from typing import Any

LOCAL = "local"


@dataclass
class HostSnapshot:
    name: str
    offset: float  # host clock − client clock, seconds (hello's `time` against our midpoint)
    host_now: float
    gpu_uuids: list[str]
    boot_time: float | None  # on the host's clock
    jobs: list[dict[str, Any]] = field(default_factory=list)
    journals: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)


def clock_offset(client: Any) -> tuple[float, dict[str, Any]]:
    t0 = time.time()
    hello = client.request("hello", timeout=30.0)
    t1 = time.time()
    host_time = hello.get("time")
    offset = float(host_time) - (t0 + t1) / 2 if isinstance(host_time, (int, float)) else 0.0
    return offset, hello


def local_boot_time() -> float | None:
    """/proc/stat's btime: the local host's start, when the agent's hello does not say."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def read_journals(
    client: Any, keys: list[tuple[str, str]], timeout: float = 60.0
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every record of each (job, node) journal: tail from seq 0 until the seq `tail` reported."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {k: [] for k in keys}
    want: dict[tuple[str, str], int] = {}
    for job, node in keys:
        last = client.tail(job, node, since_seq=0)
        if last > 0:
            want[(job, node)] = last
    deadline = time.monotonic() + timeout
    try:
        while any(not out[k] or out[k][-1]["seq"] < n for k, n in want.items()):
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [
                    f"{j}/{n}" for (j, n), s in want.items() if not out[(j, n)] or out[(j, n)][-1]["seq"] < s
                ]
                raise TimeoutError(f"journals not read within {timeout:.0f} s: {', '.join(missing[:3])}")
            try:
                job, node, records = client.events.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if (job, node) in out:
                have = out[(job, node)][-1]["seq"] if out[(job, node)] else 0
                out[(job, node)].extend(r for r in records if r.get("seq", 0) > have)
    finally:
        for job, node in keys:
            try:
                client.untail(job, node)
            except Exception:  # best effort: the connection closes at exit anyway
                pass
    return out


def snapshot(name: str, client: Any, since: float | None = None) -> HostSnapshot:
    """One host's state now. Jobs that ended before `since` (host clock) are skipped unread."""
    offset, hello = clock_offset(client)
    inventory = hello.get("gpu") or {}
    uuids = [str(g["uuid"]) for g in inventory.get("gpus") or [] if isinstance(g, dict) and g.get("uuid")]
    boot = hello.get("boot_time")
    if not isinstance(boot, (int, float)):
        uptime = hello.get("uptime_s")
        boot = float(hello["time"]) - float(uptime) if isinstance(uptime, (int, float)) else None
    if boot is None and name == LOCAL:
        boot = local_boot_time()
    jobs = client.request("jobs", timeout=30.0)["jobs"]
    if since is not None:
        jobs = [j for j in jobs if not j.get("ended_at") or j["ended_at"] >= since]
    keys = [(j["id"], str(j.get("node") or "0")) for j in jobs]
    journals = read_journals(client, keys)
    return HostSnapshot(name, offset, time.time() + offset, uuids, boot, jobs, journals)
