"""`gpudeck run --managed …`: launch the job as any other, then keep what the controller needs to
bring it back (its options and recovery policy), and start the controller when none runs."""

from __future__ import annotations

from ..actions.agents import Agents
from ..actions.launch import Launched, launch
from ..actions.options import LaunchOptions, usage
from ..store import Store
from .records import Managed, ManagedDir, Policy

MAX_RECOVERIES = 100


def run_managed(
    agents: Agents, store: Store | None, opts: LaunchOptions, policy: Policy
) -> tuple[Launched, str | None]:
    """(the job launched, the controller job started for it or None when one ran already)."""
    if not 0 <= policy.max_recoveries <= MAX_RECOVERIES:
        raise usage(f"--max-recoveries {policy.max_recoveries}: from 0 to {MAX_RECOVERIES}")
    if not 0 <= policy.lost_after <= 86400:
        raise usage(f"--lost-after {policy.lost_after:g}: seconds from 0 to 86400")
    from ..queue.submit import ensure_controller

    job = launch(agents, store, opts)
    hosts = job.hosts if len(job.hosts) > 1 else ()  # each node's, in node order: a loss replaces one
    ManagedDir().save(
        Managed(head=job.id, current=job.id, host=job.host, opts=opts, policy=policy, hosts=hosts)
    )
    return job, ensure_controller(agents, store)
