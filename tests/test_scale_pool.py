"""Scaling onto the job's pool: `+1` adds a host the job was not on (a node launched there from the
job's own command line and interpreter), free GPUs first; `--host` pins where new nodes go.
Two SSH hosts are one real sshd through two ~/.ssh/config aliases with their own agent dirs; the
reference trainer under torchrun on CPU/gloo, its samples logged per rank."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.boxes import kill_boxes_jobs, two_boxes
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import BATCH, SAMPLES, TINY, ok, points
from tests.support.waiting import wait_for
from tui.actions.placement import free_in, layout, pick_hosts
from tui.errors import GpudeckError


def test_new_nodes_add_hosts_before_doubling_up_and_prefer_free_gpus() -> None:
    # a host the job is not on wins over free GPUs on a host it is on
    assert pick_hosts(["a", "b", "c"], ["a"], 1, {"a": 8, "b": 0, "c": 0}) == ["b"]
    # among hosts the job is not on: the one with more free GPUs, then pool order
    assert pick_hosts(["a", "b", "c"], ["a"], 2, {"a": 0, "b": 1, "c": 4}) == ["c", "b"]
    # a node takes its GPUs: the next one goes where GPUs are still free
    assert pick_hosts(["a", "b"], [], 3, {"a": 4, "b": 2}, per_node=4) == ["a", "b", "a"]
    # a host that did not answer (absent from `free`) is never chosen
    assert pick_hosts(["a", "b"], ["a"], 1, {"a": 0}) == ["a"]
    with pytest.raises(GpudeckError, match=r"no host of the pool \(a, b\) answered"):
        pick_hosts(["a", "b"], [], 1, {})


def test_a_new_node_takes_its_gpus_before_the_next_choice() -> None:
    # b holds a node; a has 8 free, b 6. The first new node goes to a (the host the job is not on)
    # and takes 4 of its GPUs: with one node on each, the second goes to b (6 free), not a (4 left).
    assert pick_hosts(["a", "b"], ["b"], 2, {"a": 8, "b": 6}, per_node=4) == ["a", "b"]
    assert layout(["b"], 3, pool=["a", "b"], free={"a": 8, "b": 6}, per_node=4) == ["b", "a", "b"]
    # one GPU a node (the default) moves the choice as well: a 3, b 3 -> a, then a has 2 left
    assert pick_hosts(["a", "b"], ["a", "b"], 2, {"a": 3, "b": 3}) == ["a", "b"]
    # never below zero: two hosts out of free GPUs tie (pool order), whoever was short by more
    assert pick_hosts(["a", "b"], [], 3, {"a": 1, "b": 2}, per_node=8) == ["b", "a", "a"]


def test_layout_keeps_ranks_drops_the_highest_and_pins_with_onto() -> None:
    assert layout(["a", "b", "a"], 2) == ["a", "b"]
    assert layout(["a"], 2, pool=["a", "b"], free={"a": 0, "b": 0}) == ["a", "b"]
    assert layout(["a"], 3, pinned=["a", "b"]) == ["a", "b", "a"]  # the --host list, as a launch places
    assert layout(["a", "b"], 3) == ["a", "b", "a"]  # no pool, no pin: the job's own hosts
    assert layout(["a"], 2, pool=["a", "b"], onto=["c"]) == ["a", "c"]
    with pytest.raises(GpudeckError, match="--host: 2 hosts for 1 new node"):
        layout(["a"], 2, onto=["b", "c"])


def test_free_gpus_are_those_without_a_process() -> None:
    sample = {
        "available": True,
        "gpus": [{"util": 0, "processes": []}, {"util": 90, "processes": [{"pid": 7}]}, {"util": 0}, "junk"],
    }
    assert free_in(sample) == 2
    assert free_in({"available": False, "reason": "no driver", "gpus": []}) == 0 and free_in(None) == 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_plus_one_on_a_pool_job_launches_on_the_host_it_was_not_on(ssh_home: SshHome, tmp_path: Path) -> None:
    two_boxes(ssh_home)
    ck, log = tmp_path / "ck", tmp_path / "samples"
    try:
        job = ok(
            "run",
            "--name",
            "pooled",
            "--grace",
            "30",
            "--nodes",
            "1",
            "--pool",
            "box-a,box-b",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(free_port()),
            "--",
            "python3",
            "-m",
            "trainer",
            "--steps",
            "100000",
            *TINY,
            "--checkpoint-dir",
            str(ck),
            "--sample-log",
            str(log),
            cwd=tmp_path,
            timeout=180,
        ).strip()
        first = json.loads(ok("inspect", "--json", job, cwd=tmp_path))
        assert [(n["node"], n["host"]) for n in first["nodes"]] == [
            ("0", "box-a")
        ]  # pool order breaks the tie
        assert (
            first["multinode"]["pool"] == ["box-a", "box-b"] and first["multinode"]["launcher"] == "torchrun"
        )
        wait_for(
            lambda: any((p.get("step") or 0) >= 3 for p in points(job, tmp_path)),
            timeout=150,
            interval=0.5,
            what="step 3 on 1 node",
        )

        r = gpudeck("scale", job, "+1", cwd=tmp_path, timeout=240)
        assert r.returncode == 0, r.stderr
        new = r.stdout.strip()
        assert "1 → 2 nodes" in r.stderr, r.stderr
        obj = json.loads(ok("inspect", "--json", new, cwd=tmp_path))
        assert [(n["node"], n["host"]) for n in obj["nodes"]] == [("0", "box-a"), ("1", "box-b")]
        assert obj["resized_from"] == {"job": job, "nodes": 1} and obj["multinode"]["pool"] == [
            "box-a",
            "box-b",
        ]
        saved = [p for p in points(job, tmp_path) if p.get("event") == "checkpoint_saved"]
        assert saved, "node 0 checkpointed on the stop"
        resumed = wait_for(
            lambda: [p for p in points(new, tmp_path) if p.get("event") == "resumed"],
            timeout=150,
            interval=0.5,
            what="the resumed event",
        )
        last = saved[-1]["step"]
        assert resumed[0]["world_size"] == 2 and resumed[0]["step"] == last, resumed
        wait_for(
            lambda: any(
                (p.get("step") or 0) >= last + 3 and p.get("world_size") == 2 for p in points(new, tmp_path)
            ),
            timeout=150,
            interval=0.5,
            what="steps on 2 nodes",
        )
        assert "stopped" in ok("stop", "--grace", "30", new, cwd=tmp_path, timeout=120)
        # the loss series goes on: one point per step across the resize, world size 1 then 2
        series = {
            p["step"]: p["world_size"] for run in (job, new) for p in points(run, tmp_path) if "loss" in p
        }
        end = max(series)
        assert sorted(series) == list(range(1, end + 1))
        assert {s for s, w in series.items() if w == 1} == set(range(1, last + 1))
    finally:
        kill_boxes_jobs(ssh_home)
    # the node on box-b trained too, and every sample was seen once per epoch across the change
    ranks = sorted(p.name for p in tmp_path.glob("samples.rank*"))
    assert ranks == ["samples.rank0", "samples.rank1"]
    rows = [
        tuple(map(int, line.split()))
        for p in tmp_path.glob("samples.rank*")
        for line in p.read_text().splitlines()
    ]
    assert Counter(step for step, _, _ in rows) == {s: BATCH for s in range(1, end + 1)}
    by_epoch: dict[int, Counter] = {}
    for _, epoch, index in rows:
        by_epoch.setdefault(epoch, Counter())[index] += 1
    whole = end * BATCH // SAMPLES
    assert whole >= 1
    for epoch in range(whole):
        assert by_epoch[epoch] == {i: 1 for i in range(SAMPLES)}, epoch  # no repeat, no skip
    assert all(max(c.values()) == 1 for c in by_epoch.values())


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_new_host_needs_the_jobs_variables_again_and_gets_them(ssh_home: SshHome, tmp_path: Path) -> None:
    two_boxes(ssh_home)
    script = 'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES secret=$SECRET"; exec sleep 300'
    try:
        job = ok(
            "run",
            "--name",
            "vars",
            "--grace",
            "5",
            "--pool",
            "box-a,box-b",
            "--host",
            "box-a",
            "--launcher",
            "none",
            "--env",
            "SECRET=first",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(free_port()),
            "--",
            "bash",
            "-c",
            script,
            "x",
            "--checkpoint-dir",
            str(tmp_path / "ck"),
            cwd=tmp_path,
        ).strip()
        wait_for(
            lambda: "rank=0 of=1 secret=first" in ok("logs", job, cwd=tmp_path),
            timeout=30,
            what="node 0's line",
        )
        assert json.loads(ok("inspect", "--json", job, cwd=tmp_path))["multinode"]["env_keys"] == ["SECRET"]
        assert "\n  pool: box-a, box-b\n" in ok("inspect", job, cwd=tmp_path)
        r = gpudeck("scale", job, "+1", cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip() == (
            "gpudeck: scale: node 1 goes to box-b, which the job is not on yet; the job sets "
            "SECRET (values stay on its hosts): give them again (--env SECRET=…)"
        ), r.stderr
        assert (
            json.loads(ok("inspect", "--json", job, cwd=tmp_path))["state"] == "running"
        )  # refused before any stop
        r = gpudeck("scale", job, "+1", "--env", "SECRET=again", cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr
        new = r.stdout.strip()
        obj = json.loads(ok("inspect", "--json", new, cwd=tmp_path))
        assert [(n["node"], n["host"]) for n in obj["nodes"]] == [("0", "box-a"), ("1", "box-b")]
        for node in ("0", "1"):
            wait_for(
                lambda n=node: f"rank={n} of=2 secret=again" in ok("logs", "--node", n, new, cwd=tmp_path),
                timeout=30,
                what=f"node {node}'s line",
            )
        ok("kill", new, cwd=tmp_path)
    finally:
        kill_boxes_jobs(ssh_home)
