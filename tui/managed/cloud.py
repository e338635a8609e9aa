"""What a managed recovery asks of the providers: a cloud candidate's instance launched as a host
(the one cloud launch path, tagged gpudeck-managed, idempotent by the token the caller derives from
the journaled recovery), and a cloud host's instance state when the host stops answering.

Nobody is there to ask about a host key in the controller: the key is trusted only when the provider
published its fingerprint on the instance's console (tui/policy/cloud_capacity.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import GpudeckError
from ..settings import Settings
from .candidates import CloudCandidate, region_of

# (candidate, token, the lost host it replaces) → the new host's name
CloudLaunch = Callable[[CloudCandidate, str, str | None], str]
InstanceState = Callable[[str], str | None]  # host → its instance's state; None: not a cloud host/unknown

LOSS_STATES = ("stopping", "stopped", "terminated", "shutting-down")


@dataclass
class ManagedCloud:
    agents: Any  # Agents, with notice()
    settings: Settings
    timeout: float = 600.0

    def launch(self, candidate: CloudCandidate, token: str, like: str | None = None) -> str:
        """The instance set up as the cloud host it replaces is (SSH user, port, key, agent dir: the
        same image and key pair as a rule), else with the provider's defaults."""
        from ..actions.cloud_launch import HostLaunch, launch_host
        from ..cloud import providers
        from ..cloud.model import CloudError
        from ..policy.cloud_capacity import trust_published

        try:
            provider = providers.make(candidate.provider, candidate.region, self.settings.cloud, timeout=30.0)
        except CloudError as exc:
            raise GpudeckError(f"{candidate}: {exc}") from None
        wanted = HostLaunch(
            candidate.type,
            candidate.spot,
            image=candidate.image,
            timeout=self.timeout,
            token=token,
            zone=None if candidate.zone == candidate.region else candidate.zone,
            **_ssh_of(like),
        )

        def trust(name: str, instance: Any) -> None:
            trust_published(self.settings, provider, name, instance)

        return launch_host(provider, wanted, self.agents.notice, trust)

    def state(self, host: str) -> str | None:
        """The provider's word on a host that is a cloud instance (hosts.toml: provider, instance_id)."""
        from ..cloud import providers
        from ..cloud.model import CloudError
        from ..hosts_file import HostsFileError, load_hosts

        try:
            entry = load_hosts().get(host)
        except HostsFileError:
            return None
        extra = entry.extra if entry is not None else {}
        provider, instance_id = extra.get("provider"), extra.get("instance_id")
        if not provider or not instance_id:
            return None
        region = region_of(str(provider), str(extra.get("region") or ""))
        try:
            p = providers.make(str(provider), region, self.settings.cloud, timeout=10.0)
            instance = p.get(str(instance_id))
        except CloudError:
            return None  # the provider does not answer either: SSH's --lost-after decides
        return "terminated" if instance is None else instance.state


def _ssh_of(host: str | None) -> dict[str, Any]:
    """A cloud host's SSH user, port, key and agent dir, for its replacement; {} for any other host."""
    from ..hosts_file import HostsFileError, load_hosts
    from ..remote.ssh_config import split_target

    try:
        entry = load_hosts().get(host) if host else None
    except HostsFileError:
        return {}
    if entry is None or not entry.extra.get("provider"):
        return {}
    user, _address, port = split_target(entry.target)
    return {
        "ssh_user": user,
        "ssh_port": port or 22,
        "identity_file": entry.identity_file,
        "agent_dir": entry.agent_dir,
    }
