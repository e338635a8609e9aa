"""Issue 31 against moto: a cloud candidate's instance is launched with the key pair, the subnet of
its zone and the security groups of config.toml's [cloud.aws] (described back from EC2), and, since
its address never answers SSH within the launch's deadline, terminated at once and journaled
`instance_released` — a failed recovery leaves no paid instance behind."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from tests.test_cloud_aws import AMI, REGION, moto, moto_server  # noqa: F401 - fixtures
from tests.test_managed import Starts
from tests.test_managed_cloud_provider import chain_on
from tests.test_managed_nodes import Agents as NodeAgents
from tui.managed.cloud import ManagedCloud
from tui.managed.recover import managed_pass
from tui.settings import CloudSettings, Settings
from tui.settings_cloud_access import ProviderLaunch

pytestmark = pytest.mark.slow  # moto's server loads its EC2 data on start (seconds)

CANDIDATE = f"aws:us-east-1b:g5.xlarge:spot:{AMI}"


def test_aws_key_subnet_and_groups_then_terminated_without_ssh(
    gpudeck_home: Path,
    moto: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=moto)
    ec2.create_key_pair(KeyName="gpudeck-key")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24", AvailabilityZone="us-east-1b")["Subnet"]
    group = ec2.create_security_group(GroupName="ssh", Description="ssh", VpcId=vpc)["GroupId"]
    conf = ProviderLaunch(
        key_pair="gpudeck-key",
        security_groups=(group,),
        networks={"us-east-1b": subnet["SubnetId"]},
    )
    settings = Settings(cloud=CloudSettings(aws_regions=(REGION,), aws_endpoint_url=moto, aws=conf))
    mdir = chain_on(tmp_path, "a", fallback=(CANDIDATE, "b"))
    agents = NodeAgents({"a": {"0": {"state": "stopped", "reason": "preempted"}}, "b": {}})
    cloud = ManagedCloud(agents, settings, timeout=1.0)
    records = managed_pass(agents, None, mdir, start=Starts(), cloud=cloud.launch)

    released = records[0]
    assert released["outcome"] == "instance_released" and released["candidate"] == CANDIDATE
    assert records[1]["outcome"] == "candidate_failed" and records[-1]["to_host"] == "b"
    [made] = [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]]
    assert made["InstanceId"] == released["instance"]
    assert made["KeyName"] == "gpudeck-key" and made["SubnetId"] == subnet["SubnetId"]
    assert [g["GroupId"] for g in made["SecurityGroups"]] == [group]
    assert made["Placement"]["AvailabilityZone"] == "us-east-1b"
    assert made["State"]["Name"] == "terminated"  # given back: no paid instance left
