"""Issue 31, a launch in flight end to end: the real `policy run` (passes every second, not --once)
recovers a managed job whose cloud host the provider stopped by launching the --fallback candidate's
instance (the local Aliyun endpoint, whose instances are the test sshd) in a worker thread: the pass
that starts the launch journals `launching` and returns, a later pass finds the instance up (its
host key trusted by the published fingerprint, added to hosts.toml) and recovers the job there —
one RunInstances, under the recovery's token, however many passes the boot took."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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

pytestmark = pytest.mark.slow  # two launches over SSH, a controller's passes

CANDIDATE = "aliyun:cn-hangzhou-i:ecs.gn7i-c8g1.2xlarge:on-demand:ubuntu_22_04_x64"


@pytest.fixture
def aliyun(ssh_home: SshHome, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def managed_records(home: Path) -> list[dict]:
    path = home / "policy-journal.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r.get("kind") == "managed"]


@pytest.mark.timeout(300)
def test_the_running_controller_recovers_onto_an_instance_that_boots_between_passes(
    ssh_home: SshHome, aliyun: AliyunServer, tmp_path: Path
) -> None:
    aliyun.account.new_console = cloud_init_console(ssh_home.server)
    config = ssh_home.gpudeck_home / "config.toml"  # the candidate's zone's vSwitch, which Aliyun needs
    config.write_text(
        (config.read_text() if config.exists() else "")
        + '[cloud.aliyun]\nkey_pair = "kp-1"\nvswitches = { "cn-hangzhou-i" = "vsw-i" }\n'
    )
    agent = tmp_path / "agent"
    controller = None
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
        gpudeck("kill", "policy", cwd=tmp_path)  # this test runs its own controller
        wait_for(lambda: "step=1" in gpudeck("logs", first, cwd=tmp_path).stdout, what="the first run")

        aliyun.account.latency_s = 0.3  # every provider answer takes a while: the boot spans passes
        aliyun.account.instances[spot1]["Status"] = "Stopped"  # taken: the provider says so
        hosts = ssh_home.gpudeck_home / "hosts.toml"
        hosts.write_text(hosts.read_text().replace("root@127.0.0.1:", "root@127.0.0.2:"))  # no answer
        log = (tmp_path / "controller.log").open("w")
        controller = subprocess.Popen(
            [sys.executable, "-m", "tui", "policy", "run", "--interval", "1"],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
        home = ssh_home.gpudeck_home
        wait_for(
            lambda: any(r["outcome"] == "recovered" for r in managed_records(home)),
            timeout=200,
            interval=1,
            what="the recovery, passes later",
        )
        outcomes = [r["outcome"] for r in managed_records(home)]
        assert outcomes.index("launching") < outcomes.index("recovering") < outcomes.index("recovered")
        [launching] = [r for r in managed_records(home) if r["outcome"] == "launching"]
        assert launching["token"] == f"gpudeck-{first}-r1-n0-c0"  # the first --fallback candidate
        runs = [c for c in aliyun.account.calls if c.get("Action") == "RunInstances"]
        assert len(runs) == 2 and runs[-1]["ClientToken"] == launching["token"]  # spot1's, and one more

        [m] = ManagedDir(home / "managed").all()
        [new_instance] = [i for i in aliyun.account.instances if i != spot1]
        assert m.host == new_instance
        wait_for(lambda: "step=1" in gpudeck("logs", m.current, cwd=tmp_path).stdout, what="the job going on")
    finally:
        if controller is not None:
            controller.terminate()
            controller.wait(timeout=60)
        gpudeck("kill", "policy", cwd=tmp_path)
        kill_all_jobs(agent)
