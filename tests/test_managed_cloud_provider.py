"""Issue 31, the managed recovery's provider calls for real: the instance state of a cloud host
(hosts.toml: provider, instance_id) that stopped answering, from moto (stopped, terminated) and the
Aliyun fake — a loss at once, without waiting for --lost-after — and a cloud candidate's launch
refused for want of stock by the Aliyun SDK moving on to the next candidate with the code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from tests.support.aliyun import AliyunServer, serving
from tests.test_cloud_aws import AMI, REGION, moto, moto_server  # noqa: F401 - fixtures
from tests.test_managed import Starts
from tests.test_managed_nodes import JOB
from tests.test_managed_nodes import Agents as NodeAgents
from tui.actions.options import LaunchOptions
from tui.hosts_file import HostEntry, add_host, set_host_fields
from tui.managed.cloud import ManagedCloud
from tui.managed.records import Managed, ManagedDir, Policy
from tui.managed.recover import managed_pass
from tui.settings import CloudSettings, Settings
from tui.settings_cloud_access import ProviderLaunch


@pytest.fixture
def aliyun(monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def cloud_host(name: str, provider: str, instance_id: str, zone: str) -> None:
    add_host(HostEntry(name=name, target="root@127.0.0.1:1"))
    set_host_fields(name, {"provider": provider, "instance_id": instance_id, "region": zone})


def chain_on(tmp_path: Path, host: str, fallback: tuple[str, ...] = ("b",)) -> ManagedDir:
    mdir = ManagedDir(tmp_path / "managed")
    opts = LaunchOptions(argv=("python", "train.py"), host=host, name="spot")
    mdir.save(Managed(JOB, JOB, host, opts, Policy(fallback=fallback, lost_after=600.0)))
    return mdir


def one_pass(mdir: ManagedDir, cloud: ManagedCloud, host: str, start: Starts) -> list[dict]:
    agents = NodeAgents({"b": {}}, down={host})
    return managed_pass(agents, None, mdir, clock=lambda: 1000.0, start=start, instance_state=cloud.state)


@pytest.mark.slow  # moto's server loads its EC2 data on start (seconds)
def test_aws_a_stopped_or_terminated_instance_is_a_loss_at_once(
    gpudeck_home: Path,
    moto: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=moto)
    made = ec2.run_instances(ImageId=AMI, InstanceType="g5.xlarge", MinCount=1, MaxCount=1)
    iid = made["Instances"][0]["InstanceId"]
    cloud_host("gpu1", "aws", iid, "us-east-1a")
    cloud = ManagedCloud(None, Settings(cloud=CloudSettings(aws_regions=(REGION,), aws_endpoint_url=moto)))
    assert cloud.state("gpu1") == "running" and cloud.state("local") is None
    mdir, start = chain_on(tmp_path, "gpu1"), Starts()
    assert one_pass(mdir, cloud, "gpu1", start) == []  # running: SSH's lost_after decides
    ec2.stop_instances(InstanceIds=[iid])
    records = one_pass(mdir, cloud, "gpu1", start)
    assert records[-1]["outcome"] == "recovered" and records[-1]["to_host"] == "b"
    assert "(the provider says)" in records[-1]["why"]
    ec2.terminate_instances(InstanceIds=[iid])
    assert cloud.state("gpu1") == "terminated"


def test_aliyun_a_stopped_instance_is_a_loss_at_once(
    gpudeck_home: Path, aliyun: AliyunServer, tmp_path: Path
) -> None:
    iid = aliyun.account.add(spot=True)
    cloud_host("gpu1", "aliyun", iid, "cn-hangzhou-h")
    cloud = ManagedCloud(None, Settings())
    mdir, start = chain_on(tmp_path, "gpu1"), Starts()
    assert one_pass(mdir, cloud, "gpu1", start) == [] and start.calls == []
    aliyun.account.instances[iid]["Status"] = "Stopped"
    records = one_pass(mdir, cloud, "gpu1", start)
    assert [r["outcome"] for r in records] == ["recovering", "recovered"]
    assert "its instance is stopped (the provider says)" in records[-1]["why"]


def test_aliyun_no_stock_moves_to_the_next_candidate(
    gpudeck_home: Path, aliyun: AliyunServer, tmp_path: Path
) -> None:
    spot = "aliyun:cn-hangzhou-i:ecs.gn7i-c8g1.2xlarge:spot:img-1"
    mdir = chain_on(tmp_path, "a", fallback=(spot, "b"))
    aliyun.account.faults.append(("RunInstances", "nostock"))
    agents = NodeAgents({"a": {"0": {"state": "stopped", "reason": "preempted"}}})
    vswitch = ProviderLaunch(networks={"cn-hangzhou-i": "vsw-i"})  # Aliyun launches into a VPC only
    cloud = ManagedCloud(agents, Settings(cloud=CloudSettings(aliyun=vswitch)))
    start = Starts()
    records = managed_pass(agents, None, mdir, start=start, cloud=cloud.launch)
    failed = records[0]
    assert failed["outcome"] == "candidate_failed" and failed["candidate"] == spot
    assert failed["code"] == "OperationDenied.NoStock" and failed["capacity"] is True
    assert records[-1]["outcome"] == "recovered" and start.calls[0][1].host == "b"
    assert aliyun.account.instances == {}  # nothing was made
    [run] = [c for c in aliyun.account.calls if c.get("Action") == "RunInstances"]
    assert run["ClientToken"] == f"gpudeck-{JOB}-r1-n0-c0" and run["InstanceType"] == "ecs.gn7i-c8g1.2xlarge"
    assert run["ZoneId"] == "cn-hangzhou-i" and run["SpotStrategy"] == "SpotAsPriceGo"


@pytest.mark.slow  # moto's server loads its EC2 data on start (seconds)
def test_aws_a_candidates_zone_is_where_the_instance_is_placed(moto: str) -> None:  # noqa: F811
    from tui.cloud.aws import AwsProvider
    from tui.cloud.model import LaunchSpec

    provider = AwsProvider(REGION, endpoint_url=moto)
    iid = provider.launch(LaunchSpec("g5.xlarge", "gpudeck-zone-test", True, AMI, zone="us-east-1b"))
    made = provider.get(iid)
    assert made is not None and made.zone == "us-east-1b" and made.lifecycle == "spot"
