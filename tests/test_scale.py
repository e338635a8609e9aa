"""Multi-node jobs on `local` (node names keep two nodes on one host apart) and `gpudeck scale` in
restart mode: the real CLI, the real agent, real torchrun of the reference trainer on CPU/gloo."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import alive, launch, wait_state
from tests.support.trainer_runs import TINY, json_lines, ok
from tests.support.waiting import wait_for
from tui.actions.nodes import plan
from tui.actions.options import LaunchOptions
from tui.remote.client import AgentClient

PY = sys.executable


def job_json(ref: str) -> dict:
    return json.loads(ok("inspect", "--json", ref))


def output(ref: str, node: str) -> str:
    return ok("logs", "--node", node, ref)


@pytest.mark.slow  # ~3.5 s
def test_two_nodes_with_launcher_none_get_their_place_and_stop_together(
    gpudeck_home: Path, workdir: Path
) -> None:
    script = 'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES at=$MASTER_ADDR:$MASTER_PORT node=$NODE_RANK"; exec sleep 300'
    job = ok(
        "run",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--master-port",
        "29611",
        "--",
        "bash",
        "-c",
        script,
        cwd=workdir,
    ).strip()
    for rank in ("0", "1"):
        wait_for(
            lambda r=rank: f"rank={r} of=2 at=127.0.0.1:29611 node={r}" in output(job, r),
            timeout=20,
            what=f"node {rank}'s line",
        )
    [listed] = [j for j in json.loads(ok("ps", "--json")) if j["id"] == job]
    assert [(n["host"], n["node"]) for n in listed["nodes"]] == [("local", "0"), ("local", "1")]
    assert listed["multinode"]["nodes"] == 2 and listed["multinode"]["launcher"] == "none"
    obj = wait_for(lambda: (o := job_json(job)) and all(n["pid"] for n in o["nodes"]) and o, what="both pids")
    pids = [n["pid"] for n in obj["nodes"]]
    assert all(alive(p) for p in pids)
    assert "stopped" in ok("stop", "--grace", "5", job)
    assert [n["state"] for n in job_json(job)["nodes"]] == ["stopped", "stopped"]
    assert not [p for p in pids if alive(p)]


def test_torchrun_lines_keep_the_interpreter_and_place_nodes_round_robin() -> None:
    opts = LaunchOptions(
        argv=(PY, "-u", "-m", "trainer", "--steps", "3"),
        host="local",
        hosts=("local", "local"),
        nodes=3,
        nproc_per_node=2,
        master_port=29999,
    )
    plans = plan(opts)
    assert [(p.host, p.node) for p in plans] == [("local", "0"), ("local", "1"), ("local", "2")]
    # gpudeck's trainer runs under trainer.torchrun (a stop ends 0); any other module under torchrun itself.
    assert list(plans[2].argv) == [
        PY,
        "-u",
        "-m",
        "trainer.torchrun",
        "--nnodes=3",
        "--node-rank=2",
        "--nproc-per-node=2",
        "--master-addr=127.0.0.1",
        "--master-port=29999",
        "-m",
        "trainer",
        "--steps",
        "3",
    ]
    assert dict(plans[1].env)["GPUDECK_NODE_RANK"] == "1"
    module = plan(LaunchOptions(argv=(PY, "-m", "mytrain"), nodes=2, master_port=1234))
    assert module[0].argv[1:3] == ("-m", "torch.distributed.run")
    other = plan(LaunchOptions(argv=("./train.sh",), nodes=2, master_port=1234))
    assert other[0].argv[:1] == ("torchrun",) and "--no-python" in other[0].argv


@pytest.mark.slow  # the everyday subset stays under a minute serially
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--nodes", "0"], "--nodes 0: must be at least 1"),
        (["--nodes", "2", "--nproc-per-node", "0"], "--nproc-per-node 0: must be at least 1"),
        (["--nodes", "2", "--master-port", "70000"], "--master-port 70000"),
        (["--nodes", "2", "--launcher", "bogus"], "invalid choice"),
    ],
)
def test_bad_node_options_are_usage_errors(
    gpudeck_home: Path, workdir: Path, flags: list[str], message: str
) -> None:
    r = gpudeck("run", *flags, "--", "true", cwd=workdir)
    assert r.returncode == 2, r.stderr
    assert (
        message in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "internal error" not in r.stderr
    )


def test_torchrun_in_the_command_with_the_torchrun_launcher_is_refused(
    gpudeck_home: Path, workdir: Path
) -> None:
    r = gpudeck("run", "--nodes", "2", "--", "torchrun", "train.py", cwd=workdir)
    assert r.returncode == 2 and "--launcher none" in r.stderr


@pytest.mark.slow
def test_scale_refuses_below_one_node_and_a_command_without_checkpoints(
    gpudeck_home: Path, workdir: Path
) -> None:
    job = ok("run", "--name", "solo", "--", "sleep", "300", cwd=workdir).strip()
    r = gpudeck("scale", job, "-1")
    assert r.returncode == 2 and "at least 1 node" in r.stderr, r.stderr
    r = gpudeck("scale", job, "+x")
    assert r.returncode == 2 and "expected +N, -N or N" in r.stderr, r.stderr
    r = gpudeck("scale", job, "+1")
    assert r.returncode == 2 and "no --checkpoint-dir" in r.stderr, r.stderr
    assert job_json(job)["state"] == "running"  # a refused scale leaves the job as it was


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_two_node_torchrun_trainer_runs_to_completion(
    gpudeck_home: Path, workdir: Path, tmp_path: Path
) -> None:
    ck = tmp_path / "ck"
    job = ok(
        "run",
        "--nodes",
        "2",
        "--",
        PY,
        "-m",
        "trainer",
        "--steps",
        "4",
        *TINY,
        "--checkpoint-dir",
        str(ck),
        cwd=workdir,
    ).strip()
    obj = wait_for(
        lambda: (o := job_json(job))["state"] in ("exited", "failed") and o,
        timeout=150,
        interval=0.5,
        what="the job's end",
    )
    assert obj["state"] == "exited", (obj, output(job, "0"), output(job, "1"))
    assert obj["multinode"]["launcher"] == "torchrun" and len(obj["nodes"]) == 2
    assert obj["name"].startswith("trainer-")  # from the command, not from the torchrun line
    assert "nodes: 2 (torchrun, 1 per node, master 127.0.0.1:" in ok("inspect", job)
    lines = json_lines(output(job, "0"))
    assert any(p.get("world_size") == 2 and p.get("step") == 4 for p in lines), lines[-5:]
    assert any(p.get("event") == "done" for p in lines)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_scale_up_a_running_trainer_resumes_on_three_nodes(
    gpudeck_home: Path, workdir: Path, tmp_path: Path
) -> None:
    ck = tmp_path / "ck"
    job = ok(
        "run",
        "--name",
        "grow",
        "--grace",
        "30",
        "--nodes",
        "2",
        "--",
        PY,
        "-m",
        "trainer",
        "--steps",
        "100000",
        *TINY,
        "--checkpoint-dir",
        str(ck),
        cwd=workdir,
    ).strip()
    wait_for(
        lambda: any((p.get("step") or 0) >= 3 for p in json_lines(output(job, "0"))),
        timeout=120,
        interval=0.5,
        what="step 3 on 2 nodes",
    )
    r = gpudeck("scale", job, "+1", timeout=180)
    assert r.returncode == 0, r.stderr
    new = r.stdout.strip()
    assert new != job and "2 → 3 nodes" in r.stderr
    old = job_json(job)
    assert old["state"] in ("stopped", "failed") and not [
        n for n in old["nodes"] if n["pid"] and alive(n["pid"])
    ]
    saved = [p for p in json_lines(output(job, "0")) if p.get("event") == "checkpoint_saved"]
    assert saved, output(job, "0")[-2000:]
    obj = job_json(new)
    assert obj["name"] == "grow" and obj["restart_of"] == job
    assert obj["resized_from"] == {"job": job, "nodes": 2}
    assert f"resized from: {job} (2 nodes)" in ok("inspect", new)
    assert [(n["host"], n["node"]) for n in obj["nodes"]] == [("local", "0"), ("local", "1"), ("local", "2")]
    resumed = wait_for(
        lambda: [p for p in json_lines(output(new, "0")) if p.get("event") == "resumed"],
        timeout=150,
        interval=0.5,
        what="the resumed event",
    )
    assert resumed[0]["world_size"] == 3 and resumed[0]["step"] == saved[-1]["step"], resumed
    # the resize is journaled at the first step on 3 nodes: `metrics` shows it between the points
    marks = wait_for(
        lambda: [
            p
            for p in map(json.loads, ok("metrics", "--json", new).splitlines())
            if p.get("event") == "resized"
        ],
        timeout=120,
        interval=0.5,
        what="the resized record",
    )
    came = marks[0]["resized"]
    assert (came["from"], came["to"], came["job"], came["why"]) == (2, 3, job, "scale +1")
    assert came["step"] > saved[-1]["step"] and came["pause_s"] > 0
    text = ok("metrics", new)
    assert f"-- resized 2 → 3 nodes (world size 3) at step {came['step']:g} (scale +1), paused " in text
    ok("kill", new)


@pytest.mark.slow
def test_nodes_on_a_listed_host_twice_and_ssh_masters_need_an_address(
    gpudeck_home: Path, workdir: Path
) -> None:
    job = ok(
        "run", "--nodes", "2", "--host", "local,local", "--launcher", "none", "--", "true", cwd=workdir
    ).strip()
    assert [(n["host"], n["node"]) for n in job_json(job)["nodes"]] == [("local", "0"), ("local", "1")]
    r = gpudeck("run", "--nodes", "2", "--host", "gpu-a,gpu-b", "--", "python", "-m", "trainer", cwd=workdir)
    assert (
        r.returncode == 2 and "--master-addr: needed when nodes run on SSH hosts (gpu-a, gpu-b)" in r.stderr
    )


def test_agent_restart_as_another_node_with_changes(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = launch(client, workdir, ["true"], env={"SECRET": "s", "GPUDECK_NODE_RANK": "0"})
    wait_state(client, job["id"], {"exited"})
    new_id = job["id"][:-6] + "eeeeee"
    with pytest.raises(Exception, match="changes: expected an object with some of argv"):
        client.request("restart", job=job["id"], node="0", new_id=new_id, changes={"workdir": "/"})
    resized = {"job": job["id"], "nodes": 1}
    for node in ("0", "1"):
        obj = client.request(
            "restart",
            job=job["id"],
            node="0",
            new_id=new_id,
            as_node=node,
            changes={"argv": ["echo", node], "env": {"GPUDECK_NODE_RANK": node}, "resized_from": resized},
        )
        assert obj["node"] == node and obj["resized_from"] == resized and obj["restart_of"] == job["id"]
    spec = json.loads((agent_dir / "jobs" / new_id / "1" / "spec.json").read_text())
    assert spec["env"] == {"SECRET": "s", "GPUDECK_NODE_RANK": "1"} and spec["argv"] == ["echo", "1"]
    with pytest.raises(Exception, match="already restarted as"):  # once per new node
        client.request("restart", job=job["id"], node="0", new_id=new_id[:-6] + "dddddd", as_node="1")


def test_scale_counts() -> None:
    from tui.actions.scale import target_count
    from tui.errors import GpudeckError

    assert (target_count("+1", 2), target_count("-1", 3), target_count("4", 2)) == (3, 2, 4)
    for bad in ("-2", "0", "2", "x"):
        with pytest.raises(GpudeckError):
            target_count(bad, 2)


@pytest.mark.slow  # two stops and a relaunch: ~4.5 s
def test_scale_down_a_launcher_none_job_renews_its_placement_and_needs_its_checkpoint_dir(
    gpudeck_home: Path, workdir: Path
) -> None:
    script = 'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES"; exec sleep 300'
    (workdir / "ck").mkdir()
    job = ok(
        "run",
        "--name",
        "shrink",
        "--grace",
        "5",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--",
        "bash",
        "-c",
        script,
        "x",
        "--checkpoint-dir",
        "ck",
        cwd=workdir,
    ).strip()
    wait_for(lambda: "rank=1 of=2" in output(job, "1"), what="node 1's line")
    new = ok("scale", job, "-1").strip()
    assert [(n["node"], n["state"]) for n in job_json(job)["nodes"]] == [("0", "stopped"), ("1", "stopped")]
    obj = job_json(new)
    assert (
        len(obj["nodes"]) == 1
        and obj["multinode"]["nodes"] == 1
        and obj["resized_from"] == {"job": job, "nodes": 2}
    )
    wait_for(lambda: "rank=0 of=1" in output(new, "0"), what="the new node's line")
    r = gpudeck("scale", new, "-1")
    assert r.returncode == 2 and "at least 1 node" in r.stderr
    # the checkpoint dir gone: the job is stopped (it was asked to) but not relaunched
    (workdir / "ck").rmdir()
    r = gpudeck("scale", new, "+2")
    assert r.returncode == 1 and "checkpoint dir" in r.stderr and "not relaunched" in r.stderr, r.stderr
    assert job_json(new)["state"] == "stopped" and job_json("shrink")["id"] == new
