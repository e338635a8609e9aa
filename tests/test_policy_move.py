"""A vertical rule with `auto = true`, end to end: a one-node job on `local` (its GPU at 95 %, one fake
NVML GPU — the only fake), a pool holding `box-b` (an sshd alias) priced as the next larger type of the
same family and GPU model; `policy run` moves the job there, restart mode: it stops on `local` and
resumes on box-b from its checkpoint, with the decision journaled. And with no host of that type, a
pool that may launch gets one (the local Aliyun endpoint; the instance's address is the test sshd)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.aliyun import AliyunServer, serving
from tests.support.boxes import VENV_FIRST, kill_boxes_jobs, two_boxes
from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome
from tests.support.waiting import wait_for
from tests.test_cloud_launch import cloud_init_console
from tests.test_policy_launch import journal, ok

SMALL, BIG = "ecs.gn7-c12g1.3xlarge", "ecs.gn7-c13g1.13xlarge"  # 1 → 4 A100s: the catalog's next gn7
FAKES = Path(__file__).parent / "fakes" / "nvml"
# the checkpoint: a file in a directory both hosts see (one machine here)
SCRIPT = (
    'ck="$2"; if [ -f "$ck/state" ]; then echo "resumed from $(cat "$ck/state")"; fi; '
    'echo step=5 > "$ck/state"; echo started; exec sleep 300'
)


def busy_local_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """local's GPU, busy: the local agent and the job's supervisor read one fake NVML GPU at 95 %."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKES), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([{"uuid": "GPU-aaaa", "util": 95}]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")


def start_busy_job(tmp_path: Path) -> str:
    """The one-node job SCRIPT runs on `local`, checkpointing into tmp_path/ck (a move resumes from it)."""
    ck = tmp_path / "ck"
    ck.mkdir()
    return ok(
        "run",
        "--name",
        "busy",
        "--host",
        "local",
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
        str(ck),
        cwd=tmp_path,
    ).strip()


def kinds(events: Path) -> set[str]:
    """The record kinds in a journal so far (a last line still being written is skipped)."""
    out = set()
    for line in events.read_text().splitlines() if events.exists() else []:
        try:
            out.add(str(json.loads(line).get("kind")))
        except ValueError:
            continue
    return out


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_policy_run_moves_a_busy_job_onto_the_bigger_type_from_its_checkpoint(
    ssh_home: SshHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_boxes(ssh_home)
    busy_local_gpu(monkeypatch)
    ok("hosts", "set", "local", "provider=aliyun", f"instance_type={SMALL}", "market=on-demand")
    ok("hosts", "set", "box-b", "provider=aliyun", f"instance_type={BIG}", "market=on-demand")
    (ssh_home.gpudeck_home / "policies.toml").write_text(
        '[pool.a100]\nhosts = ["local", "box-b"]\n\n'
        '[[rule]]\nname = "bigger"\nkind = "vertical"\npool = "a100"\nabove = 90\nfor = "0s"\nauto = true\n'
    )
    try:
        job = start_busy_job(tmp_path)
        events = ssh_home.gpudeck_home / "local-agent" / "jobs" / job / "0" / "events.jsonl"
        wait_for(lambda: "gpu" in kinds(events), what="a GPU summary in the job's journal")
        out = ok("policy", "run", "--once", timeout=180)

        [applied] = journal(ssh_home.gpudeck_home)
        assert (applied["kind"], applied["from"], applied["to"], applied["outcome"]) == (
            "vertical",
            SMALL,
            BIG,
            "applied",
        ), (applied, out)
        assert applied["moved"] == {"from": "local", "to": "box-b"}
        assert (
            applied["old_instance"]["action"] == "kept"
            and "not a cloud instance" in applied["old_instance"]["why"]
        )
        moved = json.loads(ok("inspect", "--json", applied["new_job"]))
        assert [(n["node"], n["host"]) for n in moved["nodes"]] == [("0", "box-b")]
        assert json.loads(ok("inspect", "--json", job))["state"] == "stopped"
        wait_for(
            lambda: "resumed from step=5" in ok("logs", applied["new_job"]), what="the resumed line on box-b"
        )
    finally:
        kill_boxes_jobs(ssh_home)
        kill_all_jobs(ssh_home.gpudeck_home / "local-agent")


@pytest.fixture
def aliyun(ssh_home: SshHome, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:  # after ssh_home: HOME and GPUDECK_HOME are the test's own
        yield server


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_with_no_host_of_the_type_policy_run_launches_one_and_moves_the_job_there(
    ssh_home: SshHome, aliyun: AliyunServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_boxes(ssh_home)
    busy_local_gpu(monkeypatch)
    ok("hosts", "set", "local", "provider=aliyun", f"instance_type={SMALL}", "market=on-demand")
    new_agents = tmp_path / "launched-agent"
    (ssh_home.gpudeck_home / "policies.toml").write_text(
        f'[pool.a100]\nhosts = ["local"]\nlaunch = true\nprovider = "aliyun"\ninstance_type = "{SMALL}"\n'
        f'image = "ubuntu_22_04_x64"\nssh_user = "root"\nssh_port = {ssh_home.server.port}\nagent_dir = "{new_agents}"\n\n'
        '[[rule]]\nname = "bigger"\nkind = "vertical"\npool = "a100"\nabove = 90\nfor = "0s"\nauto = true\n'
    )
    aliyun.account.new_console = cloud_init_console(ssh_home.server)
    try:
        job = start_busy_job(tmp_path)
        events = ssh_home.gpudeck_home / "local-agent" / "jobs" / job / "0" / "events.jsonl"
        wait_for(lambda: "gpu" in kinds(events), what="a GPU summary in the job's journal")
        out = ok("policy", "run", "--once", timeout=180)

        launching, launched, applied = journal(ssh_home.gpudeck_home)
        [new_id] = list(aliyun.account.instances)
        assert aliyun.account.instances[new_id]["InstanceType"] == BIG  # the bigger type, not the pool's own
        assert aliyun.account.instances[new_id]["SpotStrategy"] == "NoSpot"
        assert (launching["outcome"], launched["outcome"], launched["host"]) == (
            "launching",
            "launched",
            new_id,
        ), out
        assert (applied["outcome"], applied["moved"]) == ("applied", {"from": "local", "to": new_id}), applied
        moved = json.loads(ok("inspect", "--json", applied["new_job"]))
        assert [(n["node"], n["host"]) for n in moved["nodes"]] == [("0", new_id)]
        wait_for(lambda: "resumed from step=5" in ok("logs", applied["new_job"]), what="the resumed line")
        assert f'hosts = ["local", "{new_id}"]' in (ssh_home.gpudeck_home / "policies.toml").read_text()
    finally:
        kill_boxes_jobs(ssh_home)
        kill_all_jobs(ssh_home.gpudeck_home / "local-agent")
        kill_all_jobs(new_agents)


# each process torchrun starts says its world: 1 on the small type, the big type's 4 GPUs after the move
WORLD = (
    'ck="$2"; echo "world=$WORLD_SIZE rank=$RANK"; if [ "$RANK" = 0 ]; then echo step=5 > "$ck/state"; fi; '
    "exec sleep 300"
)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_torchrun_job_moved_to_a_bigger_type_runs_a_process_per_new_gpu(
    ssh_home: SshHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32, item 2: the move kept --nproc-per-node 1, leaving 3 of the 4 new A100s idle."""
    two_boxes(ssh_home)
    busy_local_gpu(monkeypatch)
    ok("hosts", "set", "local", "provider=aliyun", f"instance_type={SMALL}", "market=on-demand")
    ok("hosts", "set", "box-b", "provider=aliyun", f"instance_type={BIG}", "market=on-demand")
    (ssh_home.gpudeck_home / "policies.toml").write_text(
        '[pool.a100]\nhosts = ["local", "box-b"]\n\n'
        '[[rule]]\nname = "bigger"\nkind = "vertical"\npool = "a100"\nabove = 90\nfor = "0s"\nauto = true\n'
    )
    ck = tmp_path / "ck"
    ck.mkdir()
    try:
        job = ok(
            "run", "--name", "busy", "--host", "local", "--grace", "5", "--launcher", "torchrun",
            "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--setup", VENV_FIRST,
            "--", "bash", "-c", WORLD, "x", "--checkpoint-dir", str(ck),
            cwd=tmp_path,
        ).strip()  # fmt: skip
        wait_for(lambda: "world=1 rank=0" in ok("logs", job), timeout=60, what="the first world")
        events = ssh_home.gpudeck_home / "local-agent" / "jobs" / job / "0" / "events.jsonl"
        wait_for(lambda: "gpu" in kinds(events), what="a GPU summary in the job's journal")
        out = ok("policy", "run", "--once", timeout=180)
        [applied] = journal(ssh_home.gpudeck_home)
        assert (applied["outcome"], applied["to"], applied["nproc_per_node"]) == ("applied", BIG, 4), (
            applied,
            out,
        )
        moved = json.loads(ok("inspect", "--json", applied["new_job"]))
        assert moved["multinode"]["nproc_per_node"] == 4, moved["multinode"]
        wait_for(
            lambda: all(f"world=4 rank={r}" in ok("logs", applied["new_job"]) for r in range(4)),
            timeout=90,
            what="four processes on the bigger type",
        )
    finally:
        kill_boxes_jobs(ssh_home)
        kill_all_jobs(ssh_home.gpudeck_home / "local-agent")
