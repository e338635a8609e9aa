"""`--elastic MIN:MAX`: torchrun's c10d rendezvous. `scale +1` starts one more node of the same job
that joins; `scale -1` stops one and the others re-form; the reference trainer checkpoints at each
change and resumes at the new world size. The real CLI, agent, torchrun and trainer on CPU/gloo."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import alive
from tests.support.trainer_runs import BATCH, SAMPLES, TINY, ok, points
from tests.support.waiting import wait_for
from tui.actions.nodes import plan
from tui.actions.options import LaunchOptions

PY = sys.executable


def test_elastic_lines_rendezvous_at_the_master_and_only_node_0_hosts_the_store() -> None:
    opts = LaunchOptions(argv=(PY, "-m", "trainer"), nodes=2, master_port=29123, elastic=(1, 3))
    plans = plan(opts, "20261201-000000-abcdef")
    assert list(plans[1].argv[:9]) == [
        PY,
        "-m",
        "trainer.torchrun",
        "--nnodes=1:3",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=127.0.0.1:29123",
        "--rdzv-id=20261201-000000-abcdef",
        "--max-restarts=1000",
    ]
    assert plans[0].argv[9].startswith("--rdzv-conf=is_host=true,") and plans[1].argv[9].startswith(
        "--rdzv-conf=is_host=false,"
    )
    assert "--node-rank" not in " ".join(plans[1].argv)
    env = dict(plans[1].env)
    assert env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1" and env["GPUDECK_ELASTIC"] == "1"
    assert plans[0].multinode.elastic == (1, 3)


@pytest.mark.slow  # the everyday subset stays under a minute serially
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--nodes", "2", "--elastic", "3:4"], "--elastic 3:4: needs 1 <= MIN <= --nodes (2) <= MAX"),
        (["--nodes", "2", "--elastic", "x"], "--elastic 'x': expected MIN:MAX node counts"),
        (
            ["--nodes", "2", "--elastic", "1:2", "--launcher", "none"],
            "--elastic: torchrun's rendezvous; not with --launcher none",
        ),
    ],
)
def test_bad_elastic_bounds_are_usage_errors(
    gpudeck_home: Path, workdir: Path, flags: list[str], message: str
) -> None:
    r = gpudeck("run", *flags, "--", "python", "-m", "trainer", cwd=workdir)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_elastic_plus_one_joins_minus_one_leaves_and_training_goes_on(
    gpudeck_home: Path, workdir: Path, tmp_path: Path
) -> None:
    ck, log = tmp_path / "ck", tmp_path / "samples"
    job = ok(
        "run",
        "--name",
        "elastic",
        "--grace",
        "30",
        "--nodes",
        "2",
        "--elastic",
        "1:3",
        "--",
        PY,
        "-m",
        "trainer",
        "--steps",
        "100000",
        *TINY,
        "--checkpoint-dir",
        str(ck),
        "--sample-log",
        str(log),
        cwd=workdir,
    ).strip()
    wait_for(
        lambda: any(p.get("world_size") == 2 and p.get("step", 0) >= 3 for p in points(job, workdir)),
        timeout=150,
        interval=0.5,
        what="steps at world size 2",
    )

    r = gpudeck("scale", job, "+1", cwd=workdir, timeout=180)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == job and "2 → 3 nodes (elastic: node 2 on local joining)" in r.stderr, r.stderr
    wait_for(
        lambda: any(p.get("world_size") == 3 for p in points(job, workdir)),
        timeout=180,
        interval=0.5,
        what="a step at world size 3",
    )
    nodes = json.loads(ok("inspect", "--json", job, cwd=workdir))["nodes"]
    assert [(n["node"], n["state"]) for n in nodes] == [("0", "running"), ("1", "running"), ("2", "running")]
    assert "  nodes: 3 running, elastic 1:3 (torchrun, 1 per node, master 127.0.0.1:" in ok(
        "inspect", job, cwd=workdir
    )

    r = gpudeck("scale", job, "-1", cwd=workdir, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "3 → 2 nodes (elastic: node 2 on local stopped; the others re-form)" in r.stderr, r.stderr
    seen3 = max(p["step"] for p in points(job, workdir) if p.get("world_size") == 3)
    wait_for(
        lambda: any(p.get("world_size") == 2 and p.get("step", 0) > seen3 for p in points(job, workdir)),
        timeout=180,
        interval=0.5,
        what="a step at world size 2 after the -1",
    )
    obj = json.loads(ok("inspect", "--json", job, cwd=workdir))
    assert obj["state"] == "running" and [n["state"] for n in obj["nodes"]] == [
        "running",
        "running",
        "stopped",
    ]

    # node 0 journaled each change as a restart-mode resize is: from → to, world size, why, step, pause
    said = wait_for(
        lambda: r if len(r := resized(job, workdir)) >= 2 else None,
        timeout=60,
        interval=0.5,
        what="two resized records",
    )
    assert [(r["from"], r["to"], r["world_size"], r["why"]) for r in said] == [
        (2, 3, 3, "scale +1"),
        (3, 2, 2, "scale -1"),
    ]
    assert all(r["step"] >= 1 and r["pause_s"] >= 0 for r in said), said
    assert f"-- resized 2 → 3 nodes (world size 3) at step {said[0]['step']:g} (scale +1), paused" in ok(
        "metrics", job, cwd=workdir
    )

    resumed = [p for p in points(job, workdir) if p.get("event") == "resumed"]
    assert [p["world_size"] for p in resumed] == [3, 2], resumed
    saved = {p["step"] for p in points(job, workdir) if p.get("event") == "checkpoint_saved"}
    assert {p["step"] for p in resumed} <= saved  # each change resumed where everyone checkpointed

    assert "stopped" in ok("stop", job, cwd=workdir, timeout=180)
    obj = json.loads(ok("inspect", "--json", job, cwd=workdir))
    assert obj["state"] == "stopped" and not [n for n in obj["nodes"] if n["pid"] and alive(n["pid"])]

    # one loss series through both changes, and every sample once per epoch across them
    series = {p["step"] for p in points(job, workdir) if "loss" in p}
    rows = [
        tuple(map(int, line.split()))
        for p in tmp_path.glob("samples.rank*")
        for line in p.read_text().splitlines()
    ]
    per_step = Counter(step for step, _, _ in rows)
    end = max(per_step)
    assert per_step == {s: BATCH for s in range(1, end + 1)} and series == set(range(1, end + 1))
    by_epoch: dict[int, Counter] = {}
    for _, epoch, index in rows:
        by_epoch.setdefault(epoch, Counter())[index] += 1
    for epoch in range(end * BATCH // SAMPLES):
        assert by_epoch[epoch] == {i: 1 for i in range(SAMPLES)}, epoch
    assert all(max(c.values()) == 1 for c in by_epoch.values())


def resized(job: str, cwd: Path) -> list[dict]:
    """The `resized` records `metrics --json` prints, in order."""
    lines = [
        json.loads(line)
        for line in ok("metrics", "--json", job, cwd=cwd).splitlines()
        if line.startswith("{")
    ]
    return [r["resized"] for r in lines if r.get("event") == "resized"]
