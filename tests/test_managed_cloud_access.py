"""Issue 31, a cloud candidate's instance reachable on a real account: the key pair, the vSwitch /
subnet and the security groups it is launched with — from the lost host's hosts.toml entry first,
then config.toml's [cloud.aliyun] / [cloud.aws] — checked in the request the Aliyun fake receives;
a candidate without what its provider needs is refused at `run` in one line naming the field.
AWS against moto: tests/test_managed_cleanup_provider.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.aliyun import AliyunServer, serving
from tests.test_managed import Starts
from tests.test_managed_cloud_provider import chain_on
from tests.test_managed_nodes import Agents as NodeAgents
from tui.hosts_file import HostEntry, add_host, load_hosts, set_host_fields
from tui.managed.candidates import parse_candidate
from tui.managed.cloud import ManagedCloud
from tui.managed.network import access_for, check_candidates
from tui.managed.recover import managed_pass
from tui.settings import CloudSettings, Settings, SettingsError, load
from tui.settings_cloud_access import ProviderLaunch

SPOT = "aliyun:cn-hangzhou-i:ecs.gn7i-c8g1.2xlarge:spot:img-1"
CONFIG = ProviderLaunch(
    key_pair="kp-config",
    security_groups=("sg-1", "sg-2"),
    networks={"cn-hangzhou-i": "vsw-config"},
)


@pytest.fixture
def aliyun(monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def launched_with(aliyun: AliyunServer, tmp_path: Path, lost: str, conf: ProviderLaunch) -> dict[str, str]:
    """The RunInstances request a recovery of `lost` sends for SPOT (refused for stock: nothing made)."""
    mdir = chain_on(tmp_path, lost, fallback=(SPOT, "b"))
    aliyun.account.faults.append(("RunInstances", "nostock"))
    agents = NodeAgents({lost: {"0": {"state": "stopped", "reason": "preempted"}}})
    cloud = ManagedCloud(agents, Settings(cloud=CloudSettings(aliyun=conf)))
    records = managed_pass(agents, None, mdir, start=Starts(), cloud=cloud.launch)
    assert records[0]["code"] == "OperationDenied.NoStock", records
    [run] = [c for c in aliyun.account.calls if c.get("Action") == "RunInstances"]
    return run


def test_config_gives_the_key_pair_vswitch_and_security_groups(
    gpudeck_home: Path, aliyun: AliyunServer, tmp_path: Path
) -> None:
    run = launched_with(aliyun, tmp_path, "a", CONFIG)
    assert run["KeyPairName"] == "kp-config" and run["VSwitchId"] == "vsw-config"
    assert (run["SecurityGroupIds.1"], run["SecurityGroupIds.2"]) == ("sg-1", "sg-2")
    assert "SecurityGroupId" not in run  # several groups: the list form only


def test_the_lost_hosts_own_key_and_network_come_first(
    gpudeck_home: Path, aliyun: AliyunServer, tmp_path: Path
) -> None:
    add_host(HostEntry(name="gpu1", target="root@127.0.0.1:1"))
    set_host_fields(
        "gpu1",
        {
            "provider": "aliyun",
            "instance_id": "i-lost",
            "region": "cn-hangzhou-i",
            "key_pair": "kp-lost",
            "subnet": "vsw-lost",
            "security_groups": ["sg-lost"],
        },
    )
    run = launched_with(aliyun, tmp_path, "gpu1", CONFIG)
    assert (run["KeyPairName"], run["VSwitchId"], run["SecurityGroupId"]) == (
        "kp-lost",
        "vsw-lost",
        "sg-lost",
    )


def test_a_subnet_is_inherited_only_in_its_own_zone() -> None:
    lost = HostEntry(
        name="gpu1",
        target="root@10.0.0.1:22",
        extra={"provider": "aliyun", "instance_id": "i-1", "region": "cn-hangzhou-h", "subnet": "vsw-h"},
    )
    access = access_for(parse_candidate(SPOT), lost, CloudSettings(aliyun=CONFIG))
    assert access.subnet == "vsw-config"  # vsw-h is in zone h; the candidate is in zone i
    assert access.ssh == {
        "ssh_user": "root",
        "ssh_port": 22,
        "identity_file": None,
        "agent_dir": "~/.gpudeck",
    }


def test_an_aliyun_candidate_without_a_vswitch_is_refused_at_run(gpudeck_home: Path, workdir: Path) -> None:
    r = gpudeck("run", "--managed", "--fallback", SPOT, "--", "true", cwd=workdir)
    assert r.returncode == 2, r.stderr
    assert "needs a vSwitch in zone cn-hangzhou-i: set [cloud.aliyun] vswitches" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert check_candidates((SPOT,), ("local",), {}, CloudSettings(aliyun=CONFIG)) == []  # with one: fine


def test_a_candidate_without_a_key_pair_is_noted_at_run() -> None:
    aws = "aws:us-east-1a:g5.xlarge:spot:ami-1"
    notes = check_candidates((aws, "b"), ("a",), {}, CloudSettings())
    assert notes == [
        f"--fallback {aws!r}: no key pair (set [cloud.aws] key_pair): its instance is reachable only if "
        "its image holds your key"
    ]
    assert check_candidates((aws,), ("a",), {}, CloudSettings(aws=ProviderLaunch(key_pair="kp"))) == []


def test_cloud_sections_are_read_and_a_wrong_field_is_named(gpudeck_home: Path) -> None:
    path = gpudeck_home / "config.toml"
    path.write_text(
        '[cloud.aws]\nkey_pair = "kp"\nsecurity_groups = ["sg-a"]\nsubnets = { "us-east-1a" = "subnet-a" }\n'
        'identity_file = "~/.ssh/k.pem"\n'
    )
    aws = load(path).cloud.aws
    assert (aws.key_pair, aws.security_groups, dict(aws.networks)) == (
        "kp",
        ("sg-a",),
        {"us-east-1a": "subnet-a"},
    )
    assert aws.identity_file == "~/.ssh/k.pem"
    path.write_text('[cloud.aliyun]\nsubnets = { "cn-hangzhou-i" = "vsw-1" }\n')
    with pytest.raises(SettingsError, match=r"\[cloud.aliyun\] subnets: unknown setting .*vswitches"):
        load(path)


def test_the_launch_records_its_key_and_network_for_the_next_replacement(gpudeck_home: Path) -> None:
    from tui.actions.cloud_launch import access_fields
    from tui.actions.cloud_launch import add_host as add_cloud_host
    from tui.cloud.model import Instance

    made = Instance("i-9", "aliyun", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", "running", zone="cn-hangzhou-i")
    add_cloud_host(
        "i-9",
        made,
        "root",
        "127.0.0.1",
        22,
        None,
        "~/.gpudeck",
        None,
        access_fields("kp", "vsw", "sg-1,sg-2"),
    )
    extra = load_hosts()["i-9"].extra
    assert (extra["key_pair"], extra["subnet"], list(extra["security_groups"])) == (
        "kp",
        "vsw",
        ["sg-1", "sg-2"],
    )
