"""The controller's capacity, for real: free GPUs from the agents, a pool's instance price from its
provider, and a launch through the one cloud core (tui/actions/cloud_launch.py, idempotent by token).

Nobody is there to ask about a host key in `policy run`: the key is trusted only when the provider
published its fingerprint on the instance's console; any other key fails the launch with the reason
(the instance runs and is in hosts.toml: `gpudeck hosts trust NAME` or `gpudeck cloud stop ID`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..actions.agents import Agents
from ..actions.placement import ask_free
from ..errors import GpudeckError
from ..settings import Settings
from .capacity import CapacityLaunched
from .rules import Pool


@dataclass
class CloudCapacity:
    agents: Agents
    settings: Settings
    timeout: float = 600.0

    def free(self, hosts: Sequence[str]) -> Mapping[str, int]:
        return ask_free(self.agents, hosts)

    def _provider(self, pool: Pool) -> Any:
        from ..actions.cloud_launch import first_region
        from ..cloud import providers
        from ..cloud.model import CloudError

        region = pool.region or first_region(str(pool.provider), self.settings.cloud)
        try:
            return providers.make(str(pool.provider), region, self.settings.cloud, timeout=30.0)
        except CloudError as exc:
            raise GpudeckError(f"pool {pool.name}: {exc}") from None

    def price(self, pool: Pool) -> float | None:
        from ..cloud.model import Instance
        from ..cloud.pricing import price_for
        from ..cost.billing import Money, convert

        provider = self._provider(pool)
        quote = price_for(
            provider,
            Instance(
                "(new)",
                str(pool.provider),
                provider.region,
                str(pool.instance_type),
                "pending",
                "spot" if pool.spot else "on-demand",
            ),
            time.time(),
        )
        if quote.per_hour is None:
            return None
        cost = self.settings.cost
        return convert(Money({quote.currency: quote.per_hour}), cost.fx, cost.currency)

    def release(self, host: Mapping[str, Any], how: str) -> str:
        from ..actions import cloud as core
        from ..cloud import providers
        from ..cloud.model import TAG_MANAGED

        provider, instance_id = host.get("provider"), host.get("instance_id")
        if not provider or not instance_id:
            raise GpudeckError("not a cloud instance (no provider and instance_id in hosts.toml)")
        found, problems = providers.configured(self.settings.cloud, only=str(provider))
        if not found:
            raise GpudeckError("; ".join(problems) or f"no {provider} region")
        target = core.find(found, str(instance_id))
        if not target.instance.opted_in:
            raise GpudeckError(
                f"{instance_id} is not tagged {TAG_MANAGED}=true: a rule stops only instances you opted in"
            )
        (core.terminate if how == "terminate" else core.stop)(target)
        return str(instance_id)

    def launch(self, pool: Pool, token: str) -> CapacityLaunched:
        from ..actions.cloud_launch import HostLaunch, launch_host

        provider = self._provider(pool)
        wanted = HostLaunch(
            str(pool.instance_type),
            pool.spot,
            None,
            pool.image,
            pool.key,
            pool.subnet,
            pool.security_group,
            ssh_user=pool.ssh_user,
            ssh_port=pool.ssh_port,
            identity_file=pool.identity_file,
            agent_dir=pool.agent_dir,
            timeout=self.timeout,
            token=token,
            zone=pool.zone,
        )
        made: list[str] = []

        def trust(name: str, instance: Any) -> None:
            made.append(instance.id)
            trust_published(self.settings, provider, name, instance)

        name = launch_host(provider, wanted, self.agents.notice, trust)
        return CapacityLaunched(name, made[0] if made else name)


def trust_published(settings: Settings, provider: Any, name: str, instance: Any) -> None:
    """Connect once: the host key is trusted only if the provider published its fingerprint."""
    from ..cloud.console import published_fingerprints
    from ..cloud.model import CloudError
    from ..remote.hostkey_errors import HostKeyError, fingerprint
    from ..remote.transport import TransportError
    from ..session import host_key_error, transport_for

    try:
        published = published_fingerprints(provider.console_output(instance))
    except CloudError:
        published = set()

    transport = transport_for(name, confirm=lambda _name, key: fingerprint(key) in published, config=settings)
    try:
        transport.connect()  # type: ignore[attr-defined]
    except HostKeyError as exc:
        why = (
            "not published on the instance's console"
            if not published
            else "not among those the console published"
        )
        raise GpudeckError(
            f"{host_key_error(name, exc)} ({why}; nobody to ask in `policy run`: {instance.id} runs "
            f"and is host {name}: `gpudeck hosts trust {name}`, or `gpudeck cloud stop {instance.id}`)"
        ) from None
    except TransportError as exc:
        raise GpudeckError(f"host {name}: {exc}") from None
    finally:
        transport.close()
