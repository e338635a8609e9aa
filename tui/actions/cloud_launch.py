"""A launched instance that becomes a gpudeck host: launch (idempotent), wait until it runs, add it
to hosts.toml with its provider fields and a HostKeyAlias of its instance id, wait for SSH.

The TUI's launch form runs `launch_host` in a worker; the CLI's `cloud launch` shares `add_host` and
`first_region`. Trusting the host key is the caller's (it needs a transport and a way to ask the
user: a prompt in the CLI, a modal in the TUI), never done silently here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..cloud import providers as providers_mod
from ..cloud.model import CloudError, Instance, LaunchSpec, Provider
from ..cloud.pricing import price_for
from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import NAME_RE, HostEntry, HostsFileError, load_hosts, set_host_fields
from ..hosts_file import add_host as add_entry
from ..settings import CloudSettings
from . import cloud as core

Progress = Callable[[str], None]


@dataclass(frozen=True)
class HostLaunch:
    instance_type: str
    spot: bool = False
    name: str | None = None
    image: str | None = None
    key: str | None = None
    subnet: str | None = None
    security_group: str | None = None
    ssh_user: str | None = None  # default: ubuntu on AWS, root on Aliyun
    ssh_port: int = 22
    identity_file: str | None = None
    agent_dir: str = "~/.gpudeck"
    timeout: float = 600.0
    token: str | None = None  # the launch's client token; None: a new one (a retry passes the first's)
    zone: str | None = None  # an availability zone (a managed job's cloud candidate names one)


def first_region(provider: str, cloud: CloudSettings) -> str:
    try:
        region = next(iter(providers_mod.regions(provider, cloud)), None)
    except CloudError as exc:
        raise GpudeckError(str(exc)) from None
    if not region:
        raise GpudeckError(f"cloud launch: no {provider} region ([cloud] {provider}_regions)", EXIT_USAGE)
    return region


def check_name(name: str | None) -> None:
    """Before paying for an instance that could not be added."""
    if name is None:
        return
    if not NAME_RE.match(name):
        raise GpudeckError(f"cloud launch: name {name!r}: use 1-64 of A-Z a-z 0-9 . _ -", EXIT_USAGE)
    try:
        taken = name in load_hosts()
    except HostsFileError as exc:
        raise GpudeckError(f"cloud launch: {exc}") from None
    if taken:
        raise GpudeckError(
            f"cloud launch: host {name} already exists (another name, or gpudeck hosts rm)", EXIT_USAGE
        )


def add_host(
    name: str,
    instance: Instance,
    user: str,
    address: str,
    port: int,
    identity_file: str | None,
    agent_dir: str,
    price: tuple[float | None, str] | None = None,
    access: dict[str, object] | None = None,
) -> None:
    """The new host in hosts.toml, with the instance's identity and — on-demand, where the provider
    quoted one (Aliyun's DescribePrice) — its price, so `cost` prices it as `cloud ls` does; and the
    key pair, subnet and security groups it was launched with (`access`: a managed job's replacement
    for it is launched with the same, tui/managed/network.py)."""
    fixed: dict[str, object] = {}
    if price is not None and price[0] is not None and instance.lifecycle != "spot":  # spot: live quotes
        fixed = {"price_per_hour": price[0], "currency": price[1]}
    try:
        add_entry(
            HostEntry(
                name=name, target=f"{user}@{address}:{port}", identity_file=identity_file, agent_dir=agent_dir
            )
        )
        set_host_fields(
            name,
            {
                "provider": instance.provider,
                "instance_id": instance.id,
                "instance_type": instance.type,
                "region": instance.zone or instance.region,
                "market": instance.lifecycle,
                "host_key_alias": instance.id,
                **fixed,
                **{k: v for k, v in (access or {}).items() if v},
            },
        )
    except HostsFileError as exc:
        raise GpudeckError(f"cloud launch: {instance.id} runs but was not added: {exc}") from None


def access_fields(key: str | None, subnet: str | None, security_group: str | None) -> dict[str, object]:
    """hosts.toml's record of how an instance is reached: key pair, subnet / vSwitch, security groups."""
    groups = [g for g in (security_group or "").split(",") if g]
    return {"key_pair": key, "subnet": subnet, "security_groups": groups or None}


def _added_before(name: str, instance: Instance) -> bool:
    """A retried launch (same token) found its instance: the first try may have added the host already."""
    try:
        entry = load_hosts().get(name)
    except HostsFileError:
        return False
    return entry is not None and entry.extra.get("instance_id") == instance.id


def launch_host(
    provider: Provider, req: HostLaunch, progress: Progress, trust: Callable[[str, Instance], None]
) -> str:
    """The new host's name, once its instance runs, SSH answers and `trust` accepted its key."""
    check_name(req.name)
    spec = LaunchSpec(
        req.instance_type,
        req.token or core.new_token(),
        req.spot,
        req.image,
        req.key,
        req.subnet,
        req.security_group,
        req.name,
        req.zone,
    )
    instance_id = core.launch(provider, spec)
    progress(f"launched {instance_id} ({provider.name} {provider.region}); waiting until it runs")
    instance = core.wait_running(provider, instance_id, timeout=req.timeout)
    name = req.name or instance.id
    user = req.ssh_user or ("ubuntu" if provider.name == "aws" else "root")
    address = instance.public_address or instance.private_address or ""
    quote = price_for(provider, instance, time.time())
    if _added_before(name, instance):
        progress(
            f"host {name} is in hosts.toml already (an earlier try of this launch added it); waiting for SSH"
        )
    else:
        add_host(
            name,
            instance,
            user,
            address,
            req.ssh_port,
            req.identity_file,
            req.agent_dir,
            (quote.per_hour, quote.currency),
            access_fields(req.key, req.subnet, req.security_group),
        )
        progress(f"added host {name} ({user}@{address}:{req.ssh_port}); waiting for SSH")
    try:
        core.wait_ssh(address, req.ssh_port, timeout=req.timeout)
    except GpudeckError as exc:
        raise GpudeckError(
            f"{exc}; {instance.id} runs and is host {name}: `gpudeck hosts trust {name}` once SSH "
            f"answers, or `gpudeck cloud stop {instance.id}`",
            exc.code,
        ) from None
    trust(name, instance)
    return name
