"""Starting queued jobs when their GPUs are free: one pass of the controller (`policy run`), and the
`run --queue` that starts at once when nothing waits ahead and the GPUs are there.

Strict FIFO per pool, within a priority: a job waits while one ahead of it in the same pool waits
(no job jumps the line by asking for fewer GPUs). Free GPUs are the agents' (`gpus` with
`assigned`: a GPU no process uses and no `--gpus` job was given); the host's agent still has the
last word (it assigns under its lock, so a GPU taken meanwhile makes the start wait again).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..actions.agents import Agents
from ..actions.launch import Launched, launch
from ..actions.options import LaunchOptions
from ..actions.placement import ask_free
from ..errors import GpudeckError
from ..store import Store
from .entries import STARTING, Queue, QueueEntry

Launch = Callable[[Agents, Store | None, LaunchOptions, str], Launched]
SHORT = "free on this host"  # the agent's refusal when its GPUs went meanwhile (remote_agent/gpus)


def fit(free: Mapping[str, int], pool: Sequence[str], nodes: int, per_node: int) -> list[str] | None:
    """A host for each node with `per_node` free GPUs (pool order; a host may take several nodes);
    None when the pool cannot hold the job now."""
    left = dict(free)
    chosen = []
    for _ in range(nodes):
        host = next((h for h in pool if left.get(h, 0) >= per_node), None)
        if host is None:
            return None
        chosen.append(host)
        left[host] -= per_node
    return chosen


def placed(opts: LaunchOptions, hosts: list[str]) -> LaunchOptions:
    """The options pinned to the hosts found free (the pool stays the job's, for its scale)."""
    return replace(opts, host=hosts[0], hosts=tuple(hosts) if len(hosts) > 1 else ())


def waiting_reason(entry: QueueEntry, ahead: int) -> str:
    model = f" {entry.opts.gpus.model}" if entry.opts.gpus and entry.opts.gpus.model else ""
    n = entry.gpus * entry.opts.nodes
    return f"waiting for {n}{model} GPU{'s' * (n != 1)} on pool {','.join(entry.opts.pool)}; {ahead} ahead"


def positions(entries: Sequence[QueueEntry]) -> dict[str, tuple[int, str]]:
    """id → (jobs ahead of it in its pool, the reason it waits)."""
    seen: dict[tuple[str, ...], int] = {}
    out = {}
    for e in entries:
        ahead = seen.get(e.opts.pool, 0)
        out[e.id] = (ahead, waiting_reason(e, ahead))
        seen[e.opts.pool] = ahead + 1
    return out


def recover(queue: Queue, live_ids: set[str]) -> list[dict[str, Any]]:
    """Starts a killed controller left half done: the job runs (done) or waits again (released)."""
    out = []
    for e in queue.entries(STARTING):
        if e.id in live_ids:
            queue.done(e)
            out.append(record("started", e, note="its start was cut after the launch: it runs"))
        else:
            queue.release(e)
            out.append(record("requeued", e, note="its start was cut before the launch: it waits again"))
    return out


def start_waiting(
    agents: Agents,
    store: Store | None,
    queue: Queue,
    start: Launch = launch,
    hosts_of: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None,
) -> list[dict[str, Any]]:
    """One pass: each pool's jobs in order, started while its hosts have their GPUs free.
    `hosts_of`: the hosts a job's --pool may use now (it and what the controller launched into it)."""
    out: list[dict[str, Any]] = []
    free_of: dict[tuple[str, ...], dict[str, int]] = {}
    blocked: set[tuple[str, ...]] = set()
    for e in queue.entries():
        pool = e.opts.pool
        if pool in blocked:
            continue
        usable = hosts_of(pool) if hosts_of is not None else pool
        if pool not in free_of:
            free_of[pool] = ask_free(agents, usable)
        hosts = fit(free_of[pool], usable, e.opts.nodes, e.gpus)
        if hosts is None:
            blocked.add(pool)
            continue
        if not queue.claim(e):
            continue  # cancelled, or another controller took it
        try:
            # onto hosts the controller launched: pinned there (the pool would place it anew), and
            # the job's pool names them for its scale
            where = (
                placed(e.opts, hosts) if usable == pool else replace(e.opts, pool=usable, hosts=tuple(hosts))
            )
            launched = start(agents, store, replace(where, host=hosts[0]), e.id)
        except GpudeckError as exc:
            if SHORT in str(exc):  # taken meanwhile: it waits again, in its place
                queue.release(e)
                blocked.add(pool)
                continue
            queue.done(e)  # it cannot start as asked (a bad command, a host gone): said, not retried
            out.append(record("failed", e, error=str(exc)))
            continue
        queue.done(e)
        for h in hosts:
            free_of[pool][h] -= e.gpus
        out.append(record("started", e, hosts=list(launched.hosts or (launched.host,))))
    return out


def record(outcome: str, e: QueueEntry, **extra: Any) -> dict[str, Any]:
    return {
        "t": round(time.time(), 3),
        "kind": "queue",
        "outcome": outcome,
        "job": {"id": e.id, "name": e.name},
        "pool": list(e.opts.pool),
        "gpus": e.gpus,
        "waited_s": round(time.time() - e.submitted_at, 1),
        **extra,
    }
