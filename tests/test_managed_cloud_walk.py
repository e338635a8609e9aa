"""Issue 31, a cloud candidate end to end: a managed job on an instance from `cloud launch` (the local
Aliyun endpoint, whose instances are the test sshd on 127.0.0.1), the instance stopped at the
provider and its address gone, and `policy run --once` taking it as lost at once (the provider's
word, with --lost-after far away), launching the --fallback candidate's instance as a host set up
like the lost one, and the job going on there. A second pass launches nothing more."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.aliyun import AliyunServer, serving
from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for
from tests.test_cloud_launch import cloud_init_console
from tui.managed.records import ManagedDir

pytestmark = pytest.mark.slow  # two launches over SSH, an agent deployed twice

CANDIDATE = "aliyun:cn-hangzhou-i:ecs.gn7i-c8g1.2xlarge:on-demand:ubuntu_22_04_x64"


@pytest.fixture
def aliyun(ssh_home: SshHome, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:  # after ssh_home: its env stays, the cloud is Aliyun's
        yield server


@pytest.mark.timeout(300)
def test_a_lost_cloud_host_goes_on_on_a_launched_candidate(
    ssh_home: SshHome, aliyun: AliyunServer, tmp_path: Path
) -> None:
    aliyun.account.new_console = cloud_init_console(ssh_home.server)
    config = ssh_home.gpudeck_home / "config.toml"  # the candidate's zone's vSwitch, and a key pair
    config.write_text(
        (config.read_text() if config.exists() else "")
        + '[cloud.aliyun]\nkey_pair = "kp-1"\nvswitches = { "cn-hangzhou-i" = "vsw-i" }\n'
    )
    agent = tmp_path / "agent"
    try:
        ok(
            "cloud", "launch", "--provider", "aliyun", "--type", "ecs.gn7i-c8g1.2xlarge",
            "--image", "ubuntu_22_04_x64", "--spot", "--name", "spot1", "--ssh-user", "root",
            "--ssh-port", str(ssh_home.server.port), "--agent-dir", str(agent), "--yes",
            cwd=tmp_path,
        )  # fmt: skip
        [spot1] = list(aliyun.account.instances)
        first = ok(
            "run", "--managed", "--name", "walk", "--host", "spot1", "--fallback", CANDIDATE,
            "--lost-after", "3600", "--", "sh", "-c", "echo step=1; exec sleep 300",
            cwd=tmp_path,
        ).strip().splitlines()[-1]  # fmt: skip
        gpudeck("kill", "policy", cwd=tmp_path)  # this test runs the controller's passes itself
        wait_for(lambda: "step=1" in gpudeck("logs", first, cwd=tmp_path).stdout, what="the first run")

        aliyun.account.instances[spot1]["Status"] = "Stopped"  # taken: the provider says so
        hosts = ssh_home.gpudeck_home / "hosts.toml"
        hosts.write_text(hosts.read_text().replace("root@127.0.0.1:", "root@127.0.0.2:"))  # no answer
        out = ok("policy", "run", "--once", cwd=tmp_path, timeout=200)
        assert "recovered" in out, out

        [m] = ManagedDir(ssh_home.gpudeck_home / "managed").all()
        [new_instance] = [i for i in aliyun.account.instances if i != spot1]
        assert m.host == new_instance and m.recoveries[0]["launched"] == {new_instance: CANDIDATE}
        assert "its instance is stopped (the provider says)" in m.recoveries[0]["why"]
        runs = [c for c in aliyun.account.calls if c.get("Action") == "RunInstances"]
        assert runs[-1]["ZoneId"] == "cn-hangzhou-i" and "SpotStrategy" not in runs[-1]
        assert (runs[-1]["VSwitchId"], runs[-1]["KeyPairName"]) == ("vsw-i", "kp-1")
        assert runs[-1]["ClientToken"] == f"gpudeck-{first}-r1-n0-c0"
        added = hosts.read_text()
        assert f"[hosts.{new_instance}]" in added and f'instance_id = "{new_instance}"' in added
        wait_for(lambda: "step=1" in gpudeck("logs", m.current, cwd=tmp_path).stdout, what="the job going on")
        new = json.loads(ok("inspect", "--json", m.current, cwd=tmp_path))
        assert new["restart_of"] == first and new["name"] == "walk"

        ok("policy", "run", "--once", cwd=tmp_path, timeout=200)  # nothing more is launched
        assert len([c for c in aliyun.account.calls if c.get("Action") == "RunInstances"]) == 2
    finally:
        gpudeck("kill", "policy", cwd=tmp_path)
        kill_all_jobs(agent)
