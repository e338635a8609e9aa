"""Issue 31, end to end: the controller launches capacity for the queue. box-a (one fake GPU) runs a
job; a second job queued on its pool waits; the pool may launch on the local Aliyun endpoint (whose
instances are the test sshd on 127.0.0.1, host keys trusted by the published fingerprint) up to a
spend per hour. The detached controller launches one instance, the queued job really runs there; a
third waits, held back by the ceiling, and `gpudeck queue` says so; once the instance runs no job
past the pool's idle_release it is terminated and leaves the pool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.aliyun import AliyunServer, serving
from tests.support.boxes import kill_boxes_jobs, two_boxes
from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for
from tests.test_cloud_launch import cloud_init_console

pytestmark = pytest.mark.slow  # a launch, three jobs, a detached controller's passes: ~1-2 min

TYPE = "ecs.gn7i-c8g1.2xlarge"  # the fake's price: CNY 10.8/h
JOB = (
    "--launcher",
    "none",
    "--master-addr",
    "127.0.0.1",
    "--",
    "sh",
    "-c",
    'echo "gpu=$CUDA_VISIBLE_DEVICES"; exec sleep 300',
)


@pytest.fixture
def aliyun(ssh_home: SshHome, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def journal(home: Path) -> list[dict]:
    path = home / "policy-journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def queued(cwd: Path) -> dict[str, dict]:
    return {q["name"]: q for q in json.loads(ok("queue", "--json", cwd=cwd))}


def running_on(cwd: Path, name: str) -> list[str]:
    jobs = json.loads(ok("ps", "--json", cwd=cwd))
    return [n["host"] for j in jobs if j["name"] == name and j["state"] == "running" for n in j["nodes"]]


@pytest.mark.timeout(420)
@pytest.mark.usefixtures("fake_nvml_bundled")
def test_the_controller_launches_an_instance_for_the_queue_and_releases_it_when_idle(
    ssh_home: SshHome, aliyun: AliyunServer, tmp_path: Path
) -> None:
    gpus = tmp_path / "gpus.json"
    gpus.write_text(json.dumps([{"uuid": "GPU-one"}]))  # each host: one GPU (its agent assigns it)
    server = ssh_home.server
    server.stop()
    server.extra = [
        f"SetEnv HOME={server.remote_home} GPUDECK_TEST_SSHD={server.port} PYNVML_FAKE_FILE={gpus}"
    ]
    server.start()
    two_boxes(ssh_home)
    home = ssh_home.gpudeck_home
    (home / "config.toml").write_text('[cost]\ncurrency = "CNY"\n')  # Aliyun quotes CNY
    launched_agents = tmp_path / "launched-agent"
    (home / "policies.toml").write_text(
        f'[pool.gpus]\nhosts = ["box-a"]\nlaunch = true\nprovider = "aliyun"\ninstance_type = "{TYPE}"\n'
        f'image = "ubuntu_22_04_x64"\nssh_user = "root"\nssh_port = {server.port}\n'
        f'agent_dir = "{launched_agents}"\nmax_spend_per_hour = 15\nidle_release = "1s"\n'
    )
    aliyun.account.new_console = cloud_init_console(server)
    try:
        ok("run", "--pool", "box-a", "--gpus", "1", "--queue", "--name", "first", *JOB, cwd=tmp_path)
        assert running_on(tmp_path, "first") == ["box-a"]  # its GPU was free: it started at once
        ok("run", "--pool", "box-a", "--gpus", "1", "--queue", "--name", "second", *JOB, cwd=tmp_path)
        # the detached controller (started for the queue) launches an instance; the job runs there
        wait_for(
            lambda: running_on(tmp_path, "second") not in ([], ["box-a"]),
            timeout=240,
            interval=2,
            what="the queued job running on the launched instance",
        )
        [instance] = list(aliyun.account.instances)
        assert running_on(tmp_path, "second") == [instance]
        wait_for(
            lambda: "gpu=0" in ok("logs", "second", cwd=tmp_path), what="its line, on the instance's GPU"
        )
        records = [r for r in journal(home) if r.get("kind") == "queue" and r.get("pool_name")]
        launching = next(r for r in records if r["outcome"] == "launching")
        [run] = [c for c in aliyun.account.calls if c.get("Action") == "RunInstances"]
        assert run["ClientToken"] == launching["token"] and launching["per_hour"] == pytest.approx(10.8)
        assert instance in (home / "policies.toml").read_text()  # joined the pool

        ok("run", "--pool", "box-a", "--gpus", "1", "--queue", "--name", "third", *JOB, cwd=tmp_path)
        wait_for(
            lambda: "spend ceiling" in queued(tmp_path).get("third", {}).get("why", ""),
            timeout=60,
            interval=2,
            what="the ceiling said in `gpudeck queue`",
        )
        why = queued(tmp_path)["third"]["why"]
        assert "CNY 10.80/h launched + CNY 10.80/h" in why and "CNY 15.00/h" in why, why
        assert len(aliyun.account.instances) == 1  # never past the ceiling

        ok("stop", "third", cwd=tmp_path)  # out of the queue
        ok("kill", "second", cwd=tmp_path)  # the instance runs no job now
        wait_for(
            lambda: any(r.get("outcome") in ("released", "release_failed") for r in journal(home)),
            timeout=90,
            interval=2,
            what="the idle instance released",
        )
        [released] = [r for r in journal(home) if r.get("outcome") == "released"]
        assert released["host"] == instance and released["instance"] == instance, journal(home)
        assert instance not in aliyun.account.instances  # terminated
        assert instance not in (home / "policies.toml").read_text()
    finally:
        gpudeck("kill", "policy", cwd=tmp_path)
        kill_boxes_jobs(ssh_home)
        kill_all_jobs(launched_agents)
