"""`policy run` end to end with capacity: a 1-node job on box-a, its pool allowed to launch on the
local Aliyun endpoint (the new instance's address is the test sshd), a backlog rule firing; the
controller launches one instance, trusts its key by the fingerprint the provider published, adds it
to hosts.toml and the pool, and grows the job to 2 nodes onto it. And the fleet's daily budget,
spent, refusing a scale up before anything is touched."""

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
from tests.support.waiting import wait_for
from tests.test_cloud_launch import cloud_init_console
from tui.policy.rules import load

TYPE = "ecs.gn7i-c8g1.2xlarge"


@pytest.fixture
def aliyun(ssh_home: SshHome, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:  # after ssh_home: HOME and GPUDECK_HOME are the test's own
        yield server


def ok(*args: str, cwd: Path | None = None, timeout: float = 90) -> str:
    r = gpudeck(*args, cwd=cwd, timeout=timeout)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def journal(home: Path) -> list[dict]:
    path = home / "policy-journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def policies(ssh_home: SshHome, new_agents: Path) -> None:
    (ssh_home.gpudeck_home / "policies.toml").write_text(
        f'# pools, by hand\n[pool.gpus]\nhosts = ["box-a"]  # mine\nlaunch = true\nprovider = "aliyun"\ninstance_type = "{TYPE}"\n'
        f'image = "ubuntu_22_04_x64"\nssh_user = "root"\nssh_port = {ssh_home.server.port}\nagent_dir = "{new_agents}"\n\n'
        '[[rule]]\nname = "backlog"\nkind = "metric"\npool = "gpus"\nmetric = "backlog"\nabove = 10000\nadd = 1\n'
        "max = 2\n"
    )


SCRIPT = 'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES"; echo backlog=12000; exec sleep 300'


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_policy_run_launches_an_instance_and_grows_the_job_onto_it(
    ssh_home: SshHome, aliyun: AliyunServer, tmp_path: Path
) -> None:
    two_boxes(ssh_home)
    new_agents = tmp_path / "launched-agent"
    policies(ssh_home, new_agents)
    aliyun.account.new_console = cloud_init_console(ssh_home.server)
    (tmp_path / "ck").mkdir()
    try:
        job = ok(
            "run",
            "--name",
            "yolo-cloud",
            "--host",
            "box-a",
            "--grace",
            "5",
            "--launcher",
            "none",
            "--master-addr",
            "127.0.0.1",
            "--",
            "bash",
            "-c",
            SCRIPT,
            "x",
            "--checkpoint-dir",
            "ck",
            cwd=tmp_path,
        ).strip()
        wait_for(lambda: "backlog=12000" in ok("logs", "--node", "0", job), what="the backlog line")
        out = ok("policy", "run", "--once", timeout=180)

        records = journal(ssh_home.gpudeck_home)
        assert len(records) == 4, (records, out)
        launching, launched, intent, applied = records  # the resize's intent is journaled before it acts
        assert intent["outcome"] == "intent" and intent["intent_id"] == applied["intent_id"]
        [new_id] = list(aliyun.account.instances)
        assert (launched["outcome"], launched["host"], launched["instance"]) == ("launched", new_id, new_id)
        [run] = [c for c in aliyun.account.calls if c.get("Action") == "RunInstances"]
        assert (
            launching["outcome"] == "launching"
            and run["ClientToken"] == launching["token"] == launched["token"]
        )
        # the new host joined the pool in policies.toml (a restarted controller counts it), comments kept
        pools = (ssh_home.gpudeck_home / "policies.toml").read_text()
        assert pools.startswith("# pools, by hand\n") and f'hosts = ["box-a", "{new_id}"]  # mine' in pools
        assert load(ssh_home.gpudeck_home / "policies.toml").pools["gpus"].hosts == ("box-a", new_id)
        assert launched["capacity"]["free_gpus"] == {"box-a": 0} and launched["capacity"]["launch"] == TYPE
        assert (applied["outcome"], applied["from"], applied["to"]) == ("applied", 1, 2), applied
        assert applied["capacity"]["onto"] == [new_id] and applied["inputs"]["value"] == 12000
        assert f"[applied → {applied['new_job']}]" in out
        hosts = (ssh_home.gpudeck_home / "hosts.toml").read_text()
        assert f'instance_id = "{new_id}"' in hosts and f'host_key_alias = "{new_id}"' in hosts
        known = (ssh_home.gpudeck_home / "known_hosts").read_text()
        assert f"\n{new_id} ssh-ed25519 " in "\n" + known  # trusted by the published fingerprint

        new = json.loads(ok("inspect", "--json", applied["new_job"]))
        assert [(n["node"], n["host"]) for n in new["nodes"]] == [("0", "box-a"), ("1", new_id)]
        wait_for(
            lambda: "rank=1 of=2" in ok("logs", "--node", "1", applied["new_job"]), what="the new node's line"
        )
    finally:
        kill_boxes_jobs(ssh_home)
        kill_all_jobs(new_agents)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_an_unpublished_host_key_fails_the_decision_and_nothing_is_resized(
    ssh_home: SshHome, aliyun: AliyunServer, tmp_path: Path
) -> None:
    two_boxes(ssh_home)
    new_agents = tmp_path / "launched-agent"
    policies(ssh_home, new_agents)
    aliyun.account.new_console = "[    0.0] Linux version 5.15 (no cloud-init fingerprints here)\n"
    (tmp_path / "ck").mkdir()
    try:
        job = ok(
            "run",
            "--name",
            "yolo-cloud",
            "--host",
            "box-a",
            "--launcher",
            "none",
            "--master-addr",
            "127.0.0.1",
            "--",
            "bash",
            "-c",
            SCRIPT,
            "x",
            "--checkpoint-dir",
            "ck",
            cwd=tmp_path,
        ).strip()
        wait_for(lambda: "backlog=12000" in ok("logs", "--node", "0", job), what="the backlog line")
        ok("policy", "run", "--once", timeout=180)
        launching, failed = journal(ssh_home.gpudeck_home)
        assert failed["outcome"] == "failed" and "unknown host key" in failed["error"]
        assert "not published on the instance's console" in failed["error"]
        known = (ssh_home.gpudeck_home / "known_hosts").read_text()
        assert not any(line.startswith("i-") for line in known.splitlines())
        assert json.loads(ok("inspect", "--json", job))["state"] == "running"

        # the retry (a new `policy run`, once the console shows the key) reuses the first try's client
        # token: the cloud core finds that instance, and no second one is made
        [new_id] = list(aliyun.account.instances)
        aliyun.account.console[new_id] = cloud_init_console(ssh_home.server)
        ok("policy", "run", "--once", timeout=180)
        records = journal(ssh_home.gpudeck_home)
        assert list(aliyun.account.instances) == [new_id], records
        assert len([c for c in aliyun.account.calls if c.get("Action") == "RunInstances"]) == 1
        again, launched, intent, applied = records[2:]
        assert intent["outcome"] == "intent" and intent["intent_id"] == applied["intent_id"]
        assert again["token"] == launching["token"] == launched["token"]
        assert (launched["instance"], applied["outcome"]) == (new_id, "applied"), applied
    finally:
        kill_boxes_jobs(ssh_home)
        kill_all_jobs(new_agents)
