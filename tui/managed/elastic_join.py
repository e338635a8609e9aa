"""The controller's side of an elastic recovery (tui/managed/elastic.py): journal the joins, then
launch those not launched yet into the running job, and record the move in the chain."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..actions.agents import Agents
from ..errors import GpudeckError
from ..store import Store
from .elastic import Join, joined_already, plan_rejoin, step
from .records import Managed, ManagedDir

Record = Callable[..., dict[str, Any]]  # recover.py's journal record: (outcome, chain, **fields)


def begin_rejoin(
    mdir: ManagedDir,
    m: Managed,
    hosts: tuple[str, ...],
    lost: tuple[int, ...],
    why: str,
    now: float,
    bad: tuple[str, ...],
    launched: dict[str, str],
) -> Managed:
    """The recovery's intent, saved before anything is launched (the survivors are never stopped)."""
    pending: dict[str, Any] = {
        "elastic": True,
        "new_id": m.current,  # the same job goes on
        "joins": plan_rejoin(m, hosts, lost),
        "nodes": list(lost),
        "why": why,
        "at": round(now, 3),
        "bad": list(bad),
    }
    if launched:
        pending["launched"] = launched
    m = m.but(pending=pending)
    mdir.save(m)
    return m


def finish_rejoin(
    agents: Agents, store: Store | None, mdir: ManagedDir, m: Managed, join: Join, record: Record
) -> list[dict[str, Any]]:
    """Launch the journaled joins a cut controller did not, then record the move: the new nodes
    appended to the chain's hosts, the lost ones departed (the recovery step's `nodes`)."""
    p = m.pending or {}
    joins = {str(k): str(v) for k, v in (p.get("joins") or {}).items()}
    there = joined_already(agents, m, joins)
    left = {k: v for k, v in joins.items() if k not in there}
    if left:
        try:
            join(agents, store, m, left, str(p.get("why") or ""))
        except GpudeckError as exc:  # tried again at the next pass; the survivors run on meanwhile
            mdir.save(m.but(pending=None))
            return [record("failed", m, to=m.current, onto=",".join(left.values()), error=str(exc))]
    s = step(m, p, joins)
    hosts = list(m.node_hosts)
    for name in sorted(joins, key=int):
        hosts.append(joins[name])
    done = m.but(
        hosts=tuple(hosts),
        pending=None,
        unreachable_since=None,
        unreachable=(),
        recoveries=(*m.recoveries, s),
    )
    mdir.save(done)
    return [record("recovered", done, **{k: v for k, v in s.items() if k != "at"})]
