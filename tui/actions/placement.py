"""Where nodes go: onto the job's pool (free GPUs first), onto its `--host` list (round-robin), or
onto hosts the user names. The choice is pure (the TUI asks it with the Fleet's GPU samples to name
the host in its confirmation; the CLI with the agents' `gpus` answers), so both see the same host.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import EXIT_USAGE, GpudeckError
from .agents import Agents
from .options import usage


def free_in(sample: Any) -> int:
    """GPUs that run no process and no job was given (`--gpus`), from a `gpus` answer (a host
    without GPUs has none free)."""
    gpus = sample.get("gpus") if isinstance(sample, dict) else None
    if not isinstance(gpus, list):
        return 0
    return sum(1 for g in gpus if isinstance(g, dict) and not g.get("processes") and not g.get("held_by"))


def pick_hosts(
    pool: Sequence[str], taken: Sequence[str], add: int, free: Mapping[str, int], per_node: int = 1
) -> list[str]:
    """`add` hosts for new nodes. A host holding fewer of the job's nodes comes first (a new node
    should add a host, not double up), then the one with more free GPUs, then pool order. Only
    hosts in `free` (those that answered) are chosen."""
    counts = Counter(taken)
    left = dict(free)
    candidates = [h for h in dict.fromkeys(pool) if h in left]
    if not candidates:
        raise GpudeckError(f"no host of the pool ({', '.join(pool)}) answered: nowhere to place a node")
    chosen: list[str] = []
    for _ in range(add):
        best = min(candidates, key=lambda h: (counts[h], -left[h], candidates.index(h)))
        chosen.append(best)
        counts[best] += 1
        left[best] = max(0, left[best] - per_node)  # the new node takes its GPUs
    return chosen


def round_robin(hosts: Sequence[str], nodes: int) -> list[str]:
    return [hosts[i % len(hosts)] for i in range(nodes)]


def layout(
    kept: Sequence[str],
    n: int,
    pool: Sequence[str] = (),
    pinned: Sequence[str] = (),
    onto: Sequence[str] = (),
    free: Mapping[str, int] | None = None,
    per_node: int = 1,
) -> list[str]:
    """The host of each rank after a resize to `n` nodes. `kept`: the hosts of the nodes that stay
    (rank order; nodes on unreachable hosts already left out), so shrinking drops the highest ranks.
    Growing: `onto` when given (one host per new node), else the pool (free GPUs first), else the
    `--host` list round-robin as a launch would place them, else the job's own hosts round-robin."""
    if n <= len(kept):
        return list(kept[:n])
    add = n - len(kept)
    if onto:
        if len(onto) != add:
            raise usage(
                f"--host: {len(onto)} host{'s' * (len(onto) != 1)} for {add} new node{'s' * (add != 1)}"
            )
        return [*kept, *onto]
    if pool:
        return [*kept, *pick_hosts(pool, kept, add, free or {}, per_node)]
    order = list(pinned) or list(dict.fromkeys(kept))
    return [*kept, *round_robin(order, n)[len(kept) :]]


def ask_free(agents: Agents, hosts: Sequence[str]) -> dict[str, int]:
    """Free GPUs per host that answers `gpus`; one that does not is told and left out."""
    distinct = list(dict.fromkeys(hosts))

    def one(host: str) -> int | GpudeckError:
        try:
            return free_in(agents.request(host, "gpus", assigned=True))
        except GpudeckError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(distinct)))) as pool:
        answers = dict(zip(distinct, pool.map(one, distinct), strict=True))
    out: dict[str, int] = {}
    for host, got in answers.items():
        if (
            isinstance(got, GpudeckError) and got.code == EXIT_USAGE
        ):  # not in hosts.toml: a typo, not a host down
            raise GpudeckError(f"--pool: {got}", EXIT_USAGE)
        if isinstance(got, GpudeckError):
            agents.notice(f"pool: skipping {host}: {got}")
        else:
            out[host] = got
    return out
