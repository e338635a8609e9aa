"""A node that fails on its own in an `--elastic` job is dropped (torchrun would retry it forever):
it ends `failed` with its cause, the job runs on at the smaller size, and node 0 journals `resized`
with why "node N on HOST failed: CAUSE". In restart mode (static rendezvous) a failing node ends the
job, whose cause is that node's own, not the peers' lost connection. The real CLI, agent, torchrun
and trainer on CPU/gloo; node 1's workers get a fault (a sitecustomize that only its setup line puts
on PYTHONPATH) once training has written a checkpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import alive
from tests.support.trainer_runs import TINY, ok, points
from tests.support.waiting import wait_for

PY = sys.executable
CAUSE = "RuntimeError: bad GPU on this node (test fault)"
FAULT = """import os, signal, threading, time
if "LOCAL_RANK" in os.environ:  # torchrun's workers, not torchrun itself
    def _fault(signum, frame):
        raise RuntimeError("bad GPU on this node (test fault)")
    def _watch(directory):
        while not any(n.startswith("ckpt-") for n in os.listdir(directory) if os.path.isdir(directory)):
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGALRM)
    signal.signal(signal.SIGALRM, _fault)
    threading.Thread(target=_watch, args=(os.environ["FAULT_CK"],), daemon=True).start()
"""


def faulty_node_1(tmp_path: Path, ck: Path) -> list[str]:
    """`--setup` that gives node 1 (only) the fault, and the env it reads."""
    fault = tmp_path / "fault"
    fault.mkdir()
    (fault / "sitecustomize.py").write_text(FAULT)
    ck.mkdir()
    return [
        "--env",
        f"FAULT_CK={ck}",
        "--setup",
        f'if [ "$GPUDECK_NODE" = 1 ]; then export PYTHONPATH={fault}${{PYTHONPATH:+:$PYTHONPATH}}; fi',
    ]


def nodes(job: str, cwd: Path) -> dict[str, dict]:
    return {n["node"]: n for n in json.loads(ok("inspect", "--json", job, cwd=cwd))["nodes"]}


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_an_elastic_node_that_fails_is_dropped_and_the_job_goes_on(
    gpudeck_home: Path, workdir: Path, tmp_path: Path
) -> None:
    ck = tmp_path / "ck"
    job = ok(
        "run",
        "--name",
        "elfail",
        "--grace",
        "30",
        "--nodes",
        "2",
        "--elastic",
        "1:2",
        *faulty_node_1(tmp_path, ck),
        "--",
        PY,
        "-m",
        "trainer",
        "--steps",
        "100000",
        *TINY,
        "--checkpoint-dir",
        str(ck),
        "--checkpoint-every",
        "2",
        cwd=workdir,
    ).strip()
    try:
        wait_for(
            lambda: nodes(job, workdir)["1"]["state"] == "failed",
            timeout=240,
            interval=0.5,
            what="node 1 dropped",
        )
        obj = json.loads(ok("inspect", "--json", job, cwd=workdir))
        assert obj["state"] == "running" and [n["state"] for n in obj["nodes"]] == ["running", "failed"], obj
        text = ok("inspect", job, cwd=workdir)
        assert CAUSE in text, text
        # the job goes on at world size 1, and node 0 says why it shrank
        wait_for(
            lambda: any(p.get("world_size") == 1 and "loss" in p for p in points(job, workdir)),
            timeout=180,
            interval=0.5,
            what="a step at world size 1",
        )
        said = wait_for(
            lambda: [r for r in json_metrics(job, workdir) if r.get("event") == "resized"],
            timeout=60,
            interval=0.5,
            what="the resized record",
        )
        assert said[0]["resized"]["from"] == 2 and said[0]["resized"]["to"] == 1, said
        assert said[0]["resized"]["why"] == f"node 1 on local failed: {CAUSE}", said
        assert "stopped" in ok(
            "stop", job, cwd=workdir, timeout=180
        )  # the nodes that stayed say how it ended
        obj = json.loads(ok("inspect", "--json", job, cwd=workdir))
        assert obj["state"] == "stopped" and [n["state"] for n in obj["nodes"]] == ["stopped", "failed"], obj
        assert not [n for n in obj["nodes"] if n["pid"] and alive(n["pid"])]
    finally:
        gpudeck("kill", job, cwd=workdir, timeout=120)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_failing_node_ends_a_restart_mode_job_with_its_own_cause(
    gpudeck_home: Path, workdir: Path, tmp_path: Path
) -> None:
    ck = tmp_path / "ck"
    job = ok(
        "run",
        "--name",
        "stfail",
        "--grace",
        "30",
        "--nodes",
        "2",
        *faulty_node_1(tmp_path, ck),
        "--",
        PY,
        "-m",
        "trainer",
        "--steps",
        "100000",
        *TINY,
        "--checkpoint-dir",
        str(ck),
        "--checkpoint-every",
        "2",
        cwd=workdir,
    ).strip()
    try:
        obj = wait_for(
            lambda: (o := json.loads(ok("inspect", "--json", job, cwd=workdir)))["state"] == "failed" and o,
            timeout=240,
            interval=0.5,
            what="the job failed",
        )
        assert obj["cause"] == CAUSE and CAUSE in obj["why"], obj  # node 1's, not node 0's lost peer
    finally:
        gpudeck("kill", job, cwd=workdir, timeout=120)


def json_metrics(job: str, cwd: Path) -> list[dict]:
    return [
        json.loads(line)
        for line in ok("metrics", "--json", job, cwd=cwd).splitlines()
        if line.startswith("{")
    ]
