"""What a cloud candidate's instance is launched with so the user's key reaches it on a real account:
the key pair, the subnet (AWS) / vSwitch (Aliyun) and the security groups — and the SSH user and key
file to log in with.

Precedence, per field, the first that has it:
1. the lost host's hosts.toml entry, when it is an instance of the same provider (`cloud launch` and
   managed launches record `key_pair`, `subnet`, `security_groups` there): its key pair and security
   groups in the same region, its subnet in the same zone — the replacement is logged into with the
   lost host's identity file, so it must get the lost host's key pair;
2. config.toml's `[cloud.aws]` / `[cloud.aliyun]` (`key_pair`, `security_groups`, `subnets` /
   `vswitches` per zone, `identity_file`, `ssh_user`);
3. nothing: AWS then places the instance in the account's default VPC and security group; Aliyun
   cannot (its GPU types launch into a VPC only): a candidate without a vSwitch is refused at `run`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..hosts_file import HostEntry
from ..regions import region_of
from ..settings import CloudSettings
from ..settings_cloud_access import NETWORK_WORD, ProviderLaunch
from .candidates import CloudCandidate, is_cloud, parse_candidate


@dataclass(frozen=True)
class LaunchAccess:
    key_pair: str | None = None
    subnet: str | None = None  # AWS subnet / Aliyun vSwitch
    security_groups: tuple[str, ...] = ()
    ssh: Mapping[str, Any] | None = None  # HostLaunch's ssh_user, ssh_port, identity_file, agent_dir

    def to_fields(self) -> dict[str, Any]:
        """What hosts.toml records of it (the next replacement inherits it)."""
        out: dict[str, Any] = {"key_pair": self.key_pair, "subnet": self.subnet}
        out["security_groups"] = list(self.security_groups) or None
        return {k: v for k, v in out.items() if v}


def access_for(candidate: CloudCandidate, like: HostEntry | None, cloud: CloudSettings) -> LaunchAccess:
    conf: ProviderLaunch = cloud.aws if candidate.provider == "aws" else cloud.aliyun
    extra = like.extra if like is not None else {}
    same_provider = extra.get("provider") == candidate.provider and bool(extra.get("instance_id"))
    where = str(extra.get("region") or "")
    same_region = same_provider and region_of(where, candidate.provider) == candidate.region
    same_zone = same_provider and where == candidate.zone
    groups = _strings(extra.get("security_groups")) if same_region else ()
    return LaunchAccess(
        key_pair=(str(extra.get("key_pair") or "") if same_region else "") or conf.key_pair,
        subnet=(str(extra.get("subnet") or "") if same_zone else "") or conf.networks.get(candidate.zone),
        security_groups=groups or conf.security_groups,
        ssh=_ssh_of(like) if same_provider else _ssh_of_config(conf),
    )


def missing(candidate: CloudCandidate, access: LaunchAccess) -> str | None:
    """One line naming what the candidate's provider needs and does not have; None: it can launch."""
    if candidate.provider == "aliyun" and not access.subnet:
        word = NETWORK_WORD["aliyun"]
        return (
            f"--fallback {str(candidate)!r}: Aliyun launches GPU instances into a VPC and needs a vSwitch "
            f'in zone {candidate.zone}: set [cloud.aliyun] {word} = {{ {candidate.zone!r} = "vsw-…" }} '
            "in config.toml (or replace a host `cloud launch --subnet` made in that zone)"
        )
    return None


def check_candidates(
    fallback: tuple[str, ...],
    job_hosts: tuple[str, ...],
    entries: Mapping[str, HostEntry],
    cloud: CloudSettings,
) -> list[str]:
    """At `run`: a cloud candidate must be launchable whichever of the job's hosts it replaces.
    ValueError with one line naming the candidate and the field it lacks. Returned: a note per
    candidate launched without a key pair (reachable only if its image holds the user's key)."""
    notes: list[str] = []
    for item in fallback:
        if not is_cloud(item):
            continue
        candidate = parse_candidate(item)
        for host in job_hosts or ("local",):
            access = access_for(candidate, entries.get(host), cloud)
            problem = missing(candidate, access)
            if problem:
                raise ValueError(problem)
            if not access.key_pair and item not in " ".join(notes):
                notes.append(
                    f"--fallback {item!r}: no key pair (set [cloud.{candidate.provider}] key_pair): "
                    "its instance is reachable only if its image holds your key"
                )
    return notes


def check_at_run(
    fallback: tuple[str, ...], opts: Any, cloud: CloudSettings, give_up_after: str | None
) -> tuple[float, list[str]]:
    """`run --managed`'s checks that need config.toml and hosts.toml: each cloud candidate can launch
    (check_candidates, its notes returned); `--give-up-after` read. ValueError with one line naming
    what is wrong."""
    from ..hosts_file import HostsFileError, load_hosts
    from ..policy.durations import duration
    from .records import DEFAULT_GIVE_UP_AFTER

    seconds = DEFAULT_GIVE_UP_AFTER
    if give_up_after is not None:
        try:
            seconds = duration(give_up_after)
        except ValueError as exc:
            raise ValueError(f"--give-up-after: {exc}") from None
        if seconds <= 0:
            raise ValueError(f"--give-up-after {give_up_after!r}: expected a duration > 0")
    if any(is_cloud(x) for x in fallback):
        try:
            entries = load_hosts()
        except HostsFileError as exc:
            raise ValueError(str(exc)) from None
        hosts = tuple(opts.hosts) or ((opts.host,) if opts.host else ())
        return seconds, check_candidates(fallback, hosts, entries, cloud)
    return seconds, []


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(x for x in value.split(",") if x)
    if isinstance(value, list):
        return tuple(str(x) for x in value if x)
    return ()


def _ssh_of(entry: HostEntry | None) -> dict[str, Any]:
    """A cloud host's SSH user, port, key and agent dir, for its replacement."""
    from ..remote.ssh_config import split_target

    if entry is None:
        return {}
    user, _address, port = split_target(entry.target)
    return {
        "ssh_user": user,
        "ssh_port": port or 22,
        "identity_file": entry.identity_file,
        "agent_dir": entry.agent_dir,
    }


def _ssh_of_config(conf: ProviderLaunch) -> dict[str, Any]:
    out = {"ssh_user": conf.ssh_user, "identity_file": conf.identity_file}
    return {k: v for k, v in out.items() if v}
