"""What every provider answers in: one `Instance` shape, one error type, one small interface."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Protocol

# Tags gpudeck writes on instances it launches. `gpudeck-managed=true` is also the user's opt-in
# for rules that stop instances: nothing ever stops an instance without it.
TAG_MANAGED = "gpudeck-managed"
TAG_TOKEN = "gpudeck-launch-token"
TAG_NAME = "Name"  # AWS's own name tag; Aliyun has InstanceName

STATES = ("pending", "running", "stopping", "stopped", "terminated")


class CloudError(Exception):
    """A provider refused or could not be reached; one line naming the provider, call and reason."""


class RetryableError(CloudError):
    """Throttling, a 5xx or a timeout: the same call may succeed later."""


@dataclass
class Instance:
    id: str
    provider: str  # "aws" | "aliyun"
    region: str
    type: str
    state: str  # one of STATES (provider words mapped), or the provider's own word if unknown
    lifecycle: str = "on-demand"  # "on-demand" | "spot"
    name: str | None = None
    zone: str | None = None
    gpus: int | None = None  # None: the provider did not say
    gpu_model: str | None = None
    launch_time: float | None = None  # epoch seconds (UTC) the instance last started
    public_address: str | None = None
    private_address: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    spot_persistent: bool | None = None  # AWS: a persistent spot request can stop; one-time cannot

    @property
    def opted_in(self) -> bool:
        """gpudeck launched it or the user tagged it: only such instances may be stopped by a rule."""
        return self.tags.get(TAG_MANAGED, "").lower() in ("true", "yes", "1")

    @property
    def address(self) -> str | None:
        return self.public_address or self.private_address

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "provider": self.provider,
            "region": self.region,
            "zone": self.zone,
            "type": self.type,
            "gpus": self.gpus,
            "gpu_model": self.gpu_model,
            "state": self.state,
            "lifecycle": self.lifecycle,
            "launch_time": self.launch_time,
            "public_address": self.public_address,
            "private_address": self.private_address,
            "opted_in": self.opted_in,
        }


@dataclass(frozen=True)
class LaunchSpec:
    instance_type: str
    token: str  # ClientToken and the gpudeck tag looked up before any retry
    spot: bool = False
    image: str | None = None
    key: str | None = None
    subnet: str | None = None  # AWS subnet / Aliyun vSwitch
    security_group: str | None = None
    name: str | None = None
    zone: str | None = None  # an availability zone to launch in (None: where the provider places it)


Point = tuple[float, float]  # (epoch seconds, GPU utilization %)


class Provider(Protocol):
    name: str
    region: str

    def list(self) -> list[Instance]:
        """Every GPU instance in this region (terminated ones left out)."""
        ...

    def get(self, instance_id: str) -> Instance | None: ...

    def gpu_util(self, instance: Instance, start: float, end: float) -> builtins.list[Point]:
        """The instance's GPU utilization (mean over its GPUs) per minute; [] when there is no metric."""
        ...

    def find_launched(self, token: str) -> Instance | None:
        """The instance a launch with this token made, if any (the tag lookup before a retry)."""
        ...

    def launch(self, spec: LaunchSpec) -> str:
        """Ask for one instance; returns its id. May raise RetryableError after the instance was made."""
        ...

    def stop(self, instance: Instance) -> None: ...

    def start(self, instance: Instance) -> None: ...

    def terminate(self, instance: Instance) -> None: ...

    def console_output(self, instance: Instance) -> str:
        """The instance's console text (where cloud-init prints its host key fingerprints); '' if none."""
        ...

    def spot_price(self, instance: Instance, start: float, end: float) -> tuple[float, str, str] | None:
        """(per hour, currency, source) the provider bills now, for a spot instance; None if unknown."""
        ...

    def on_demand_price(self, instance: Instance) -> tuple[float, str, str] | None:
        """The provider's live list price, where it has an API for it; None: use the catalog."""
        ...
