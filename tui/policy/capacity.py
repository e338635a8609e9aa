"""Capacity for a rule's scale up: the pool's free hosts first; when none has a free GPU and the pool
allows `launch`, one cloud instance per new node — if the budgets can pay one more hour of it.

Pure decisions here (the controller asks them); the IO behind `Capacity` is tui/policy/cloud_capacity.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..actions.find import Job
from ..format import money
from .rules import Policies, Pool, Rule

HORIZON_H = 1.0  # a launch must be payable for this many hours


@dataclass(frozen=True)
class CapacityLaunched:
    host: str  # the hosts.toml name it was added under
    instance: str  # the provider's id


class Capacity(Protocol):
    def free(self, hosts: Sequence[str]) -> Mapping[str, int]:
        """Free GPUs per host that answered (a host that did not is left out)."""
        ...

    def price(self, pool: Pool) -> float | None:
        """What one instance of the pool costs per hour, in the budget's currency; None: unknown."""
        ...

    def release(self, host: Mapping[str, Any], how: str) -> str:
        """Stop (how = "stop") or terminate the cloud instance behind a host's hosts.toml fields, if it
        is tagged gpudeck-managed; its id. GpudeckError with the reason otherwise."""
        ...

    def launch(self, pool: Pool, token: str) -> CapacityLaunched:
        """One instance, running, added to hosts.toml, its host key trusted; GpudeckError otherwise.
        The launch is idempotent on `token`: a retry with it finds the instance an earlier try made."""
        ...


def pool_of(rule: Rule | None, job: Job, policies: Policies) -> Pool | None:
    """The pool a decision grows: the rule's own, else the first pool holding all the job's hosts."""
    if rule is not None and rule.pool:
        return policies.pools.get(rule.pool)
    hosts = {str(n.get("host")) for n in job.nodes}
    return next((p for p in policies.pools.values() if hosts and hosts <= set(p.hosts)), None)


def launch_token(pool: str, job_id: str, rule: str, rank: int, done: int = 0) -> str:
    """The client token of the instance a decision launches for the job's node `rank`: the same on every
    retry of that decision (the cloud core finds the instance a failed try made instead of a second).
    `done`: how many launches for that node already completed (a later, new launch gets a new token)."""
    digest = hashlib.sha256("\0".join((pool, job_id, rule, str(rank), str(done))).encode()).hexdigest()
    return f"gpudeck-p-{digest[:24]}"


def has_free_host(free: Mapping[str, int]) -> bool:
    return any(n > 0 for n in free.values())


def launch_refusal(
    per_hour: float | None,
    count: int,
    fleet_left: float | None,
    fleet_burn: float | None,
    job_left: float | None,
    currency: str = "USD",
) -> str | None:
    """Why the budgets refuse `count` new instances (None: they can pay one more hour of them); every
    figure in `currency`."""
    if fleet_left is None and job_left is None:
        return None
    if per_hour is None:
        return "the new instance's price is unknown, so no budget can be shown to pay for it"
    extra = per_hour * count * HORIZON_H
    if fleet_left is not None and fleet_left < (fleet_burn or 0.0) * HORIZON_H + extra:
        return (
            f"the fleet's daily budget has {money(fleet_left, currency)} left, less than one hour of the fleet "
            f"({money(fleet_burn or 0.0, currency, '/h')}) and {count} new instance(s) at "
            f"{money(per_hour, currency, '/h')}"
        )
    if job_left is not None and job_left < extra:
        return (
            f"the job's budget has {money(job_left, currency)} left, less than one hour of {count} new "
            f"instance(s) at {money(per_hour, currency, '/h')}"
        )
    return None
