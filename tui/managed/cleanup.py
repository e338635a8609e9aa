"""A failed or finished recovery never leaves a paid instance behind. Two cases:

- a candidate's instance was made but never became a host (not running, no SSH within the launch's
  deadline, a host key not published): tui/managed/cloud.py gives it back at once;
- an instance lost to a later candidate (made for a node at one pass — the controller killed while
  it booted, a launch cut — while the node went elsewhere at a later one), or made for a recovery
  that gave up: after each `recovered` and `gave_up`, every launch token of that recovery that did
  not become the node's host is looked up at its provider and its instance given back.

Each is journaled `instance_released` with the instance, the candidate and why. Only instances that
carry the recovery's own token are touched (tagged gpudeck-managed by the launch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import GpudeckError
from .candidates import CloudCandidate, is_cloud, launch_token, parse_candidate
from .records import Managed, ManagedDir, journal_record

Release = Callable[[CloudCandidate, str, str], "dict[str, Any] | None"]


def give_back(provider: Any, candidate: CloudCandidate, token: str, why: str) -> dict[str, Any] | None:
    """Terminate (AWS) / delete (Aliyun) the instance this token launched, drop its hosts.toml entry."""
    from ..cloud.model import CloudError
    from ..hosts_file import HostsFileError, load_hosts, remove_host

    try:
        instance = provider.find_launched(token)
    except CloudError as exc:
        raise GpudeckError(f"{candidate}: looking up {token}: {exc}") from None
    if instance is None or instance.state == "terminated":
        return None
    try:
        provider.terminate(instance)
    except CloudError as exc:
        raise GpudeckError(f"{candidate}: releasing {instance.id}: {exc}") from None
    host = None
    try:
        for name, entry in load_hosts().items():
            if entry.extra.get("instance_id") == instance.id:
                host = name
                remove_host(name)
    except HostsFileError:
        pass  # the instance is gone; a stale entry only fails to answer
    return {"instance": instance.id, "host": host, "candidate": str(candidate), "why": why}


def release_unused(
    records: list[dict[str, Any]], mdir: ManagedDir, release: Release | None
) -> list[dict[str, Any]]:
    """The pass's records, then one `instance_released` per instance its recoveries left unused."""
    if release is None:
        return records
    out = list(records)
    for record in records:
        if record.get("outcome") not in ("recovered", "gave_up"):
            continue
        m = next((x for x in mdir.all() if x.head == record.get("chain")), None)
        if m is not None:
            out.extend(_released(m, record, release))
    return out


def _released(m: Managed, record: dict[str, Any], release: Release) -> list[dict[str, Any]]:
    if record["outcome"] == "recovered":
        number = len(m.recoveries)
        step = m.recoveries[-1] if m.recoveries else {}
        nodes = [int(i) for i in step.get("nodes") or [0]]
        to = str(step.get("to_host") or "").split(",")
        won = {
            i: dict(step.get("launched") or {}).get(to[k] if k < len(to) else "") for k, i in enumerate(nodes)
        }
        why = f"lost to {step.get('to_host')} in recovery {number}"
    else:
        number = len(m.recoveries) + 1
        nodes = list(range(len(m.node_hosts)))
        won = {}
        why = f"recovery {number} gave up"
    out: list[dict[str, Any]] = []
    for index, item in enumerate(m.policy.fallback):
        if not is_cloud(item) or m.policy.fallback.index(item) != index:
            continue
        candidate = parse_candidate(item)
        for node in nodes:
            if won.get(node) == item:
                continue
            token = launch_token(m.head, number, node, index)
            try:
                released = release(candidate, token, why)
            except GpudeckError as exc:
                out.append(journal_record("release_failed", m, candidate=item, token=token, error=str(exc)))
                continue
            if released:
                out.append(journal_record("instance_released", m, token=token, **released))
    return out
