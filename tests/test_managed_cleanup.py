"""Issue 31, a failed recovery never leaves a paid instance behind: an instance that never answered
SSH within the launch's deadline is given back at once (the Aliyun fake: deleted, gone from `cloud
ls`, its hosts.toml entry dropped), and after a recovery or a give-up every launch token of that
recovery that did not become the node's host is looked up and its instance given back, journaled
`instance_released` with why. AWS against moto: tests/test_managed_cleanup_provider.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.support.aliyun import AliyunServer, serving
from tests.test_managed import Starts
from tests.test_managed_cloud import JOB, NO_CAPACITY, ON_DEMAND, SPOT, TAKEN_ON_A, Agents, Cloud, one_node
from tests.test_managed_cloud_provider import chain_on
from tests.test_managed_nodes import Agents as NodeAgents
from tui.hosts_file import HostEntry, add_host, load_hosts, set_host_fields
from tui.managed.candidates import CloudCandidate
from tui.managed.cleanup import release_unused
from tui.managed.cloud import ManagedCloud
from tui.managed.recover import managed_pass
from tui.settings import CloudSettings, Settings
from tui.settings_cloud_access import ProviderLaunch

ALIYUN = "aliyun:cn-hangzhou-i:ecs.gn7i-c8g1.2xlarge:spot:img-1"


@pytest.fixture
def aliyun(monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


class Releases:
    """A provider's side of the release: the instances Cloud made, by token."""

    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud
        self.asked: list[tuple[str, str, str]] = []

    def __call__(self, candidate: CloudCandidate, token: str, why: str) -> dict[str, Any] | None:
        self.asked.append((str(candidate), token, why))
        host = self.cloud.made.pop(token, None)
        return (
            None
            if host is None
            else {"instance": host, "host": host, "candidate": str(candidate), "why": why}
        )


def test_an_instance_that_lost_to_a_later_candidate_is_released(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT, ON_DEMAND))
    cloud = Cloud()

    def killed(candidate: CloudCandidate, token: str, like: str | None = None) -> str:
        cloud(candidate, token, like)  # SPOT's instance made, then the controller dies while it boots
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        managed_pass(Agents(TAKEN_ON_A), None, mdir, start=Starts(), cloud=killed)
    cloud.refuse[SPOT] = NO_CAPACITY  # at the next pass SPOT is refused: ON_DEMAND wins
    releases = Releases(cloud)
    records = release_unused(
        managed_pass(Agents(TAKEN_ON_A), None, mdir, start=Starts(), cloud=cloud), mdir, releases
    )
    assert [r["outcome"] for r in records] == [
        "candidate_failed",
        "recovering",
        "recovered",
        "instance_released",
    ]
    released = records[-1]
    assert released["instance"] == "i-0000" and released["token"] == f"gpudeck-{JOB}-r1-n0-c0"
    assert released["why"] == "lost to i-0001 in recovery 1" and released["candidate"] == SPOT
    assert [token for _, token, _ in releases.asked] == [f"gpudeck-{JOB}-r1-n0-c0"]  # the winner is kept
    assert list(cloud.made) == [f"gpudeck-{JOB}-r1-n0-c1"]


def test_a_recovery_that_gives_up_releases_what_it_launched(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT,), give_up_after=60.0)
    cloud = Cloud(refuse={SPOT: NO_CAPACITY})
    cloud.made[f"gpudeck-{JOB}-r1-n0-c0"] = "i-stray"  # made by a launch cut earlier
    releases = Releases(cloud)
    first = managed_pass(Agents(TAKEN_ON_A), None, mdir, clock=lambda: 1000.0, start=Starts(), cloud=cloud)
    assert release_unused(first, mdir, releases) == first  # waiting: nothing released yet
    late = managed_pass(Agents(TAKEN_ON_A), None, mdir, clock=lambda: 1200.0, start=Starts(), cloud=cloud)
    records = release_unused(late, mdir, releases)
    assert [r["outcome"] for r in records][-2:] == ["gave_up", "instance_released"]
    assert records[-1]["instance"] == "i-stray" and records[-1]["why"] == "recovery 1 gave up"


def test_aliyun_an_instance_without_ssh_is_deleted_at_once(
    gpudeck_home: Path, aliyun: AliyunServer, tmp_path: Path
) -> None:
    add_host(HostEntry(name="gpu1", target="root@127.0.0.1:1"))  # port 1: nothing answers SSH there
    set_host_fields("gpu1", {"provider": "aliyun", "instance_id": "i-lost", "region": "cn-hangzhou-i"})
    mdir = chain_on(tmp_path, "gpu1", fallback=(ALIYUN, "b"))
    agents = NodeAgents({"gpu1": {"0": {"state": "stopped", "reason": "preempted"}}, "b": {}})
    vswitch = ProviderLaunch(networks={"cn-hangzhou-i": "vsw-i"})
    cloud = ManagedCloud(agents, Settings(cloud=CloudSettings(aliyun=vswitch)), timeout=1.0)
    records = managed_pass(agents, None, mdir, start=Starts(), cloud=cloud.launch)
    released, failed = records[0], records[1]
    assert released["outcome"] == "instance_released" and released["candidate"] == ALIYUN
    assert "did not answer within 1 s" in released["why"]
    assert failed["outcome"] == "candidate_failed" and f"released {released['instance']}" in failed["error"]
    assert records[-1]["outcome"] == "recovered" and records[-1]["to_host"] == "b"
    deletes = [c for c in aliyun.account.calls if c.get("Action") == "DeleteInstance"]
    assert [(c["InstanceId"], c["Force"]) for c in deletes] == [(released["instance"], "true")]
    assert aliyun.account.instances == {}  # deleted: a stopped pay-as-you-go instance still bills disks
    assert released["instance"] not in load_hosts() and released["host"] == released["instance"]
    listed = gpudeck("cloud", "ls", "--provider", "aliyun", "--json", cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
