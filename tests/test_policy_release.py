"""The instance a vertical move left, released through the cloud core on the local Aliyun endpoint
(real HTTP, the real SDK): stopped — or terminated when the rule says so — only when it is tagged
gpudeck-managed; an untagged one is refused with the reason and keeps running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.aliyun import AliyunServer, serving
from tui.errors import GpudeckError
from tui.policy.cloud_capacity import CloudCapacity
from tui.settings import load

SMALL = "ecs.gn7-c12g1.3xlarge"


@pytest.fixture
def aliyun(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def capacity() -> CloudCapacity:
    return CloudCapacity(agents=None, settings=load())  # type: ignore[arg-type]  # release asks no agent


def host(instance_id: str) -> dict[str, str]:
    return {
        "provider": "aliyun",
        "instance_id": instance_id,
        "instance_type": SMALL,
        "region": "cn-hangzhou-h",
    }


def test_a_managed_instance_is_stopped_or_terminated(aliyun: AliyunServer) -> None:
    stopped = aliyun.account.add(SMALL, tags={"gpudeck-managed": "true"})
    gone = aliyun.account.add(SMALL, tags={"gpudeck-managed": "true"})
    assert capacity().release(host(stopped), "stop") == stopped
    assert aliyun.account.status(stopped) == "Stopped"
    capacity().release(host(gone), "terminate")
    assert gone not in aliyun.account.instances


def test_an_instance_the_user_did_not_opt_in_is_never_stopped(aliyun: AliyunServer) -> None:
    theirs = aliyun.account.add(SMALL)
    with pytest.raises(GpudeckError, match="not tagged gpudeck-managed=true"):
        capacity().release(host(theirs), "stop")
    assert aliyun.account.status(theirs) == "Running"
    assert not [c for c in aliyun.account.calls if c.get("Action") in ("StopInstance", "DeleteInstance")]


def test_a_host_that_is_no_cloud_instance_says_so(aliyun: AliyunServer) -> None:
    with pytest.raises(GpudeckError, match="not a cloud instance"):
        capacity().release({"instance_type": SMALL}, "stop")
