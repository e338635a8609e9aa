"""One cost per managed chain (`gpudeck cost`): the sum of its jobs' costs as the report has them
(each job's nodes, each node's hours once: a recovery is a new job id, so nothing is counted twice),
and the recovery line: what the jobs that were replaced cost up to their end (the preempted or
lost instance's hours, and the work since their last checkpoint that the next job did again)."""

from __future__ import annotations

from typing import Any

from .records import Managed, ManagedDir


def chain_ids(m: Managed) -> list[str]:
    """The chain's job ids, oldest first."""
    ids = [m.head]
    for r in m.recoveries:
        to = r.get("to")
        if isinstance(to, str) and to not in ids:
            ids.append(to)
    return ids


def chain_costs(jobs: list[dict[str, Any]], mdir: ManagedDir | None = None) -> list[dict[str, Any]]:
    """For each managed chain with a job in the report: its jobs, total and recovery cost (None
    where a job's cost is unknown: a total is never shown smaller than it is)."""
    by_id = {j.get("id"): j for j in jobs}
    out = []
    for m in (mdir or ManagedDir()).all():
        ids = chain_ids(m)
        listed = [by_id[i] for i in ids if i in by_id]
        if not listed:
            continue
        replaced = [by_id[i] for i in ids[:-1] if i in by_id]
        out.append(
            {
                "chain": m.head,
                "name": m.opts.name or m.head,
                "jobs": ids,
                "current": m.current,
                "recoveries": len(m.recoveries),
                "accrued_usd": _sum(listed),
                "recovery_usd": _sum(replaced) if m.recoveries else 0.0,
                "missing": [i for i in ids if i not in by_id],  # rm'd, or on a host that is gone
                "finished": m.finished,
            }
        )
    return out


def _sum(jobs: list[dict[str, Any]]) -> float | None:
    values = [j.get("accrued_usd") for j in jobs]
    if any(v is None for v in values):
        return None
    return round(sum(float(v) for v in values if v is not None), 6)


def chain_lines(chains: list[dict[str, Any]], money: Any) -> list[str]:
    """`chain NAME: N jobs, $X` and its `recovery:` line, for `gpudeck cost`'s text."""
    lines = []
    for c in chains:
        missing = f" ({len(c['missing'])} not listed)" if c["missing"] else ""
        lines.append(
            f"chain {c['name']} ({c['chain']}): {len(c['jobs'])} job{'s' * (len(c['jobs']) != 1)}, "
            f"{money(c['accrued_usd'])}{missing}"
        )
        if c["recoveries"]:
            lines.append(
                f"  recovery: {c['recoveries']} recover{'y' if c['recoveries'] == 1 else 'ies'}, "
                f"{money(c['recovery_usd'])} on the jobs replaced"
            )
    return lines
