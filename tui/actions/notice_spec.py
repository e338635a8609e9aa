"""The spec's `notice` for a host: its hosts.toml `provider` (aws or aliyun, the providers whose
metadata service publishes a spot interruption notice) and optional `metadata_endpoint`, so the
host's agent watches the notice while the job runs (remote_agent/preempt/)."""

from __future__ import annotations

from typing import Any

from remote_agent.spec import NOTICE_PROVIDERS, PreemptNotice, SpecError

from ..hosts_file import hosts_path
from .options import usage


def preempt_notice(host: str, settings: dict[str, Any]) -> PreemptNotice | None:
    """None for a host whose provider publishes no notice (or none is set); a bad
    `metadata_endpoint` is a usage error naming hosts.toml's field."""
    provider = settings.get("provider")
    endpoint = settings.get("metadata_endpoint")
    label = f"{hosts_path()}: [hosts.{host}] metadata_endpoint"
    if provider not in NOTICE_PROVIDERS:
        if endpoint is not None:
            raise usage(
                f"{label}: needs provider = {' or '.join(repr(p) for p in NOTICE_PROVIDERS)} on that host"
            )
        return None
    wire: dict[str, Any] = {"provider": provider}
    if endpoint is not None:
        wire["metadata_endpoint"] = endpoint
    try:
        return PreemptNotice.from_wire(wire)
    except SpecError as exc:
        raise usage(f"{label}: {str(exc).split(': ', 1)[-1]}") from None
