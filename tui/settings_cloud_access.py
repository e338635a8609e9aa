"""config.toml's `[cloud.aws]` / `[cloud.aliyun]`: what an instance gpudeck launches on its own (a
managed job's cloud candidate) needs to be reachable with the user's key on a real account: the key
pair, the subnet (AWS) or vSwitch (Aliyun) per zone, the security groups, and the SSH user and key
file to log in with. Read by tui/settings.py's reader (one place parses config.toml).

    [cloud.aws]
    key_pair = "gpudeck"
    security_groups = ["sg-0123"]
    subnets = { "us-east-1a" = "subnet-aaa", "us-east-1b" = "subnet-bbb" }
    identity_file = "~/.ssh/gpudeck.pem"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn, Protocol

# The provider's own word for a zone's network: a subnet on AWS, a vSwitch on Aliyun.
NETWORK_WORD = {"aws": "subnets", "aliyun": "vswitches"}


@dataclass(frozen=True)
class ProviderLaunch:
    key_pair: str | None = None
    security_groups: tuple[str, ...] = ()
    networks: Mapping[str, str] = field(default_factory=dict)  # zone → subnet / vSwitch id
    identity_file: str | None = None
    ssh_user: str | None = None


class _Reader(Protocol):
    def string(self, t: dict[str, Any], table: str, key: str) -> str | None: ...

    def strings(self, t: dict[str, Any], table: str, key: str) -> tuple[str, ...]: ...

    def fail(self, table: str, key: str, problem: str, header: str | None = None) -> NoReturn: ...


def read_launch(reader: _Reader, provider: str, t: Any) -> ProviderLaunch:
    table = f"cloud.{provider}"
    if not isinstance(t, dict):
        reader.fail("cloud", provider, "expected a table", header=table)
    word = NETWORK_WORD[provider]
    known = ("key_pair", "security_groups", word, "identity_file", "ssh_user")
    for key in t:
        if key not in known:
            reader.fail(table, key, f"unknown setting (known: {', '.join(known)})")
    nets = t.get(word, {})
    if not isinstance(nets, dict) or not all(isinstance(v, str) and v for v in nets.values()):
        reader.fail(
            table, word, f'expected a table of zone = id, such as {{ "zone-a" = "id" }}, got {nets!r}'
        )
    return ProviderLaunch(
        key_pair=reader.string(t, table, "key_pair") or None,
        security_groups=reader.strings(t, table, "security_groups"),
        networks=MappingProxyType({str(k): str(v) for k, v in nets.items()}),
        identity_file=reader.string(t, table, "identity_file") or None,
        ssh_user=reader.string(t, table, "ssh_user") or None,
    )
