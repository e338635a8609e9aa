"""Issue 29, findings 2, 3, 10 and 14 (a resize's stop reason): a resize, a restart, a stop and a
removal of one job are decided once for the whole job. Real concurrent CLIs on `local`; a job whose
stop waits on a gate file holds a resize in its stop for as long as the test needs."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.jobs import spec
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

# On SIGTERM: say so, then wait for the gate file (in the workdir) before ending.
GATED = (
    "trap 'echo stopping; while [ ! -e gate ]; do sleep 0.05; done; exit 0' TERM; "
    'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES"; while :; do sleep 0.2; done'
)


def cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """A gpudeck command running beside the test (a second user at another terminal)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tui", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def gated_job(workdir: Path, nodes: int) -> str:
    (workdir / "ck").mkdir(exist_ok=True)
    job = ok(
        "run", "--name", "gated", "--grace", "30", "--nodes", str(nodes), "--launcher", "none",
        "--", "bash", "-c", GATED, "x", "--checkpoint-dir", "ck",
        cwd=workdir,
    ).strip()  # fmt: skip
    for rank in range(nodes):
        wait_for(
            lambda r=rank: f"rank={r} of={nodes}" in ok("logs", "--node", str(r), job),
            timeout=20,
            what=f"node {rank}'s line",
        )
    return job


def nodes_of(client: AgentClient, job: str) -> list[dict]:
    return sorted((j for j in client.request("jobs")["jobs"] if j["id"] == job), key=lambda j: j["node"])


def finished(p: subprocess.Popen[str], timeout: float = 20) -> tuple[int, str]:
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        raise AssertionError(f"{p.args[3:]} still ran after {timeout:g} s; stderr: {err}") from None
    return p.returncode, err


def running_jobs() -> list[dict]:
    return [j for j in json.loads(ok("ps", "--json")) if j["state"] in ("starting", "running")]


@pytest.mark.slow  # a 3-node job, a resize held in its stop: ~6 s
def test_two_scales_at_once_one_wins_the_other_is_refused_before_anything(
    gpudeck_home: Path, workdir: Path, client: AgentClient
) -> None:
    job = gated_job(workdir, 3)
    first = cli("scale", job, "-1", cwd=workdir)
    wait_for(lambda: "stopping" in ok("logs", "--node", "0", job), timeout=20, what="the first scale's stop")
    # the second scale is answered at once: the job is being resized (before, it stopped the job too
    # and raced the first for each node's restart marker)
    code, err = finished(cli("scale", job, "-1", cwd=workdir), timeout=15)
    assert code == 1 and "a resize is under way" in err and "one change of a job at a time" in err, err
    (workdir / "gate").touch()
    code, err = finished(first, timeout=60)
    assert code == 0, err
    [new] = [j for j in running_jobs() if j["name"] == "gated"]
    assert len(new["nodes"]) == 2 and new["id"] != job
    # the resize's own stop is journaled as the resize's, not the user's (finding 14)
    assert {n["state"] for n in nodes_of(client, job)} == {"stopped"}
    assert {n["reason"] for n in nodes_of(client, job)} == {"scale"}
    ok("stop", new["id"])


def phase(agent_dir: Path, job: str) -> str | None:
    path = agent_dir / "jobs" / job / "transition.json"
    return json.loads(path.read_text()).get("phase") if path.exists() else None


@pytest.mark.slow  # ~6 s
def test_a_stop_during_a_scale_wins_and_the_scale_says_so(
    gpudeck_home: Path, workdir: Path, agent_dir: Path
) -> None:
    job = gated_job(workdir, 2)
    scale = cli("scale", job, "+1", cwd=workdir)
    wait_for(lambda: "stopping" in ok("logs", "--node", "0", job), timeout=20, what="the scale's stop")
    stop = cli("stop", job, cwd=workdir)
    # the user's stop has reached the job (code without the mark waits 10 s here, then goes on)
    with contextlib.suppress(AssertionError):
        wait_for(lambda: phase(agent_dir, job) == "stopped", timeout=10, what="the stop's mark")
    (workdir / "gate").touch()
    code, err = finished(stop, timeout=60)
    assert code == 0, err
    code, err = finished(scale, timeout=60)
    # before: the scale relaunched on 3 nodes after the stop answered, silently
    assert code == 1 and "stopped during the resize" in err, err
    wait_for(lambda: not running_jobs(), timeout=30, what="nothing running")
    # the stop is over: a restart of the job may go now
    ok("restart", job)


def test_a_node_dir_left_holding_only_a_restart_marker_can_be_removed(
    agent_dir: Path, client: AgentClient, workdir: Path
) -> None:
    """What a `restart` racing `rm` left on a node (finding 10): `ps` showed it `starting` and `rm`
    refused it forever."""
    s = spec(workdir, ["true"])
    ghost = agent_dir / "jobs" / s["id"] / "1"
    ghost.mkdir(parents=True, mode=0o700)
    (ghost / "restarted.json").write_text(json.dumps({"restarted_as": s["id"], "t": 0}))
    assert client.request("rm", job=s["id"], node="1") == {"removed": s["id"]}
    assert not (agent_dir / "jobs" / s["id"]).exists()
