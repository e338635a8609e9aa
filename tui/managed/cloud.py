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
from ..regions import region_of
from ..settings import Settings
from .candidates import CloudCandidate

# (candidate, token, the lost host it replaces) → the new host's name
CloudLaunch = Callable[[CloudCandidate, str, str | None], str]
# (candidate, token, why) → what was released ({instance, host, candidate, why}); None: nothing there
CloudRelease = Callable[[CloudCandidate, str, str], dict[str, Any] | None]
InstanceState = Callable[[str], str | None]  # host → its instance's state; None: not a cloud host/unknown

LOSS_STATES = ("stopping", "stopped", "terminated", "shutting-down")


class LaunchFailed(GpudeckError):
    """A candidate's launch failed after its instance was made; `released` says how it was given back."""

    def __init__(self, message: str, released: dict[str, Any] | None) -> None:
        super().__init__(message)
        self.released = released


@dataclass
class ManagedCloud:
    agents: Any  # Agents, with notice()
    settings: Settings
    timeout: float = 600.0

    def _provider(self, candidate: CloudCandidate) -> Any:
        from ..cloud import providers
        from ..cloud.model import CloudError

        try:
            return providers.make(candidate.provider, candidate.region, self.settings.cloud, timeout=30.0)
        except CloudError as exc:
            raise GpudeckError(f"{candidate}: {exc}") from None

    def launch(self, candidate: CloudCandidate, token: str, like: str | None = None) -> str:
        """The instance with the key pair, subnet / vSwitch and security groups the lost host had or
        config.toml's [cloud.PROVIDER] names (tui/managed/network.py), logged into as the lost host
        was. An instance made whose launch then fails (not running, no SSH within the timeout, a key
        not published) is given back at once: LaunchFailed says so."""
        from ..actions.cloud_launch import HostLaunch, launch_host
        from ..policy.cloud_capacity import trust_published
        from .network import access_for, missing

        access = access_for(candidate, _entry(like), self.settings.cloud)
        problem = missing(candidate, access)
        if problem:
            raise GpudeckError(problem)
        provider = self._provider(candidate)
        wanted = HostLaunch(
            candidate.type,
            candidate.spot,
            image=candidate.image,
            key=access.key_pair,
            subnet=access.subnet,
            security_group=",".join(access.security_groups) or None,
            timeout=self.timeout,
            token=token,
            zone=None if candidate.zone == candidate.region else candidate.zone,
            **(access.ssh or {}),
        )

        def trust(name: str, instance: Any) -> None:
            trust_published(self.settings, provider, name, instance)

        try:
            return launch_host(provider, wanted, self.agents.notice, trust)
        except GpudeckError as exc:
            try:
                released = self.release(candidate, token, str(exc), provider)
            except GpudeckError as again:  # said with the launch's own error: `cloud ls` shows it
                raise GpudeckError(
                    f"{exc}; an instance it made could not be looked up or released: {again}"
                ) from None
            if released is None:
                raise
            raise LaunchFailed(f"{exc}; released {released['instance']}", released) from None

    def release(
        self, candidate: CloudCandidate, token: str, why: str, provider: Any = None
    ) -> dict[str, Any] | None:
        """Give back the instance a launch with this token made (terminated on AWS, deleted on
        Aliyun: a stopped pay-as-you-go instance still bills its disks), and its hosts.toml entry."""
        from .cleanup import give_back

        return give_back(provider or self._provider(candidate), candidate, token, why)

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
        region = region_of(str(extra.get("region") or ""), str(provider))
        try:
            p = providers.make(str(provider), region, self.settings.cloud, timeout=10.0)
            instance = p.get(str(instance_id))
        except CloudError:
            return None  # the provider does not answer either: SSH's --lost-after decides
        return "terminated" if instance is None else instance.state


def _entry(host: str | None) -> Any:
    """The lost host's hosts.toml entry (None: none, or hosts.toml unreadable)."""
    from ..hosts_file import HostsFileError, load_hosts

    try:
        return load_hosts().get(host) if host else None
    except HostsFileError:
        return None
