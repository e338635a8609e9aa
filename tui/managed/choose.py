"""Where a managed recovery goes: the policy's candidates in order (hosts that answer and have the
GPUs free; cloud candidates launched as hosts), less those cooling down after a recent loss, and
cloud candidates cooling down after a refused launch (tui/managed/backoff.py)."""

from __future__ import annotations

from typing import Any

from ..actions.agents import Agents
from ..actions.placement import free_in
from ..errors import GpudeckError
from .backoff import cooling
from .candidates import error_code, is_capacity, is_cloud, launch_token, parse_candidate
from .cloud import CloudLaunch
from .records import Managed

COOL_DOWN = 600.0  # seconds a host (or cloud candidate) that was just lost or taken is not chosen again


def _avoided(m: Managed, bad: tuple[str, ...], now: float) -> set[str]:
    """Hosts (and cloud candidates) not chosen now: the ones just lost or taken, and those of a
    recent loss (a cool-down); a lost host launched from a cloud candidate cools that candidate too."""
    out = set(bad)
    for r in m.recoveries:
        if r.get("avoid") and now - float(r.get("at") or 0) < COOL_DOWN:
            avoid = r["avoid"]
            out |= {str(avoid)} if isinstance(avoid, str) else {str(a) for a in avoid}
    origin: dict[str, str] = {}
    for r in m.recoveries:
        origin.update({str(k): str(v) for k, v in (r.get("launched") or {}).items()})
    return out | {origin[h] for h in out if h in origin}


def candidates(m: Managed, lost: tuple[int, ...], bad: tuple[str, ...], now: float) -> list[str]:
    """The fallback candidates (else the job's own hosts), less the avoided ones and the hosts its
    other nodes keep. A cloud candidate counts once per lost node: it can launch one for each."""
    keep = {h for i, h in enumerate(m.node_hosts) if i not in lost}
    avoid = _avoided(m, bad, now) | keep
    out: list[str] = []
    for h in m.policy.fallback or m.node_hosts:
        if h not in avoid:
            out.extend([h] * (len(lost) if is_cloud(h) else 1))
    return out


def replacements(
    agents: Agents,
    m: Managed,
    lost: tuple[int, ...],
    bad: tuple[str, ...],
    now: float,
    cloud: CloudLaunch | None = None,
    tried: list[dict[str, Any]] | None = None,
    launched: dict[str, str] | None = None,
) -> tuple[str, ...] | None:
    """Each node's host after the recovery: a lost node's is the next candidate that answers (and
    has the GPUs free, for a job that asks for some) or, for a cloud candidate, whose instance could
    be launched; the others keep theirs. None: too few. Each failed launch is in `tried`, with the
    provider's error code (a capacity error or not), and the next candidate is tried."""
    hosts = list(m.node_hosts)
    order = list(dict.fromkeys(candidates(m, lost, bad, now)))
    used: set[str] = set()
    failed: set[str] = set(cooling(m, now))  # refused lately: not asked again before their next try
    for i in lost:
        host = None
        for c in order:
            if c in used or c in failed:
                continue
            if not is_cloud(c):
                if _can_take(agents, m, c):
                    host = c
                    used.add(c)
                    break
                continue
            host = _launch_candidate(m, c, i, cloud, tried if tried is not None else [])
            if host is not None:
                if launched is not None:
                    launched[host] = c
                break
            failed.add(c)
        if host is None:
            return None
        hosts[i] = host
    return tuple(hosts)


def _launch_candidate(
    m: Managed, candidate: str, node: int, cloud: CloudLaunch | None, tried: list[dict[str, Any]]
) -> str | None:
    """The host a cloud candidate's instance became, or None (its failure in `tried`). The token is
    the chain's head and its recovery number (both journaled) and the node: a controller killed
    mid-launch finds that instance again at its next pass, and never launches a second."""
    if cloud is None:
        return None
    token = launch_token(m.head, len(m.recoveries) + 1, node, m.policy.fallback.index(candidate))
    try:
        return cloud(
            parse_candidate(candidate), token, m.node_hosts[node] if node < len(m.node_hosts) else None
        )
    except (GpudeckError, ValueError) as exc:
        released = getattr(exc, "released", None)  # its instance made, then given back (cloud.py)
        if released:
            tried.append(_failure(m, **{**released, "outcome": "instance_released", "token": token}))
        code = error_code(str(exc))
        tried.append(
            _failure(
                m,
                candidate=candidate,
                code=code,
                capacity=is_capacity(code),
                error=str(exc),
            )
        )
        return None


def _can_take(agents: Agents, m: Managed, host: str) -> bool:
    try:
        sample = agents.request(host, "gpus", assigned=True)
    except GpudeckError:
        return False
    return m.opts.gpus is None or free_in(sample) >= m.opts.gpus.count


def _failure(m: Managed, **extra: Any) -> dict[str, Any]:
    import time

    return {
        "t": round(time.time(), 3),
        "kind": "managed",
        "outcome": "candidate_failed",
        "job": {"id": m.current, "name": m.opts.name or m.head},
        "chain": m.head,
        "recoveries": len(m.recoveries),
        **extra,
    }
