"""Pre-flight of multi-node jobs: the agents' listen/probe/versions ops on real sockets and real
interpreters, and the refusals `gpudeck run --nodes` and `scale` make before anything starts.
Two SSH hosts are one real sshd through two ~/.ssh/config aliases with their own agent dirs."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.boxes import kill_boxes_jobs, two_boxes
from tests.support.sshd import SshHome, free_port
from tests.support.waiting import wait_for
from tui.actions.nodes import plan
from tui.actions.options import LaunchOptions
from tui.actions.preflight import preflight
from tui.errors import GpudeckError
from tui.remote.client import AgentClient, AgentError
from tui.session import Session


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port bound (not listening) by someone else on every address: not free, and refusing."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        yield int(s.getsockname()[1])


def test_a_probe_reaches_the_listener_and_names_the_interface(client: AgentClient) -> None:
    port = free_port()
    held = client.request("listen", port=port, seconds=20)
    got = client.request("probe", addr="127.0.0.1", port=port, count=3)
    assert got["reachable"] and got["error"] is None and got["token"] == held["token"]
    assert got["iface"] == "lo" and got["local_addr"] == "127.0.0.1" and got["rtt_ms"] >= 0
    with pytest.raises(AgentError, match=f"port {port} is not free on this host"):
        client.request("listen", port=port)  # held: a second listener (or torchrun) could not bind it
    assert client.request("unlisten", port=port) == {"was_listening": True}
    gone = client.request("probe", addr="127.0.0.1", port=port, count=1)
    assert not gone["reachable"] and "Connection refused" in gone["error"] and gone["token"] is None
    assert client.request("unlisten", port=port) == {"was_listening": False}


def test_probe_and_listen_refuse_bad_arguments_in_one_line(client: AgentClient, busy_port: int) -> None:
    with pytest.raises(AgentError, match=f"port {busy_port} is not free on this host"):
        client.request("listen", port=busy_port)
    for args, message in (
        ({"port": 70000}, "port: expected 1..65535"),
        ({"port": 80, "seconds": 1000}, "seconds:"),
    ):
        with pytest.raises(AgentError, match=message):
            client.request("listen", **args)
    with pytest.raises(AgentError, match="count: expected 1..20"):
        client.request("probe", addr="127.0.0.1", port=80, count=0)
    with pytest.raises(AgentError, match="addr: expected"):
        client.request("probe", addr=["x"], port=80)


@pytest.mark.slow  # imports torch: ~1.5 s
def test_versions_are_the_job_interpreters_in_its_environment(client: AgentClient, tmp_path: Path) -> None:
    import torch

    got = client.request("versions", python=sys.executable, timeout=120)
    assert got["torch"] == torch.__version__ and got["cuda"] == torch.version.cuda and got["error"] is None
    missing = client.request("versions", python="/nonexistent/python3")
    assert missing["torch"] is None and "/nonexistent/python3" in missing["error"]
    # setup lines run first, as for a job: a failing one is the answer's error
    failed = client.request("versions", python=sys.executable, setup=["false"])
    assert failed["torch"] is None and "setup line failed: false" in failed["error"]


@pytest.mark.slow  # two CLI runs: ~1.7 s
def test_a_busy_master_port_refuses_the_launch_naming_node_and_reason(
    gpudeck_home: Path, workdir: Path, busy_port: int
) -> None:
    r = gpudeck(
        "run",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--master-port",
        str(busy_port),
        "--",
        "sleep",
        "300",
        cwd=workdir,
    )
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1
    assert line.startswith(
        f"gpudeck: pre-flight: node 0 on local: master port {busy_port}: port {busy_port} is not free"
    )
    assert json.loads(gpudeck("ps", "--json", "--all").stdout) == []  # nothing was launched


def test_a_master_port_nobody_answers_on_is_refused_before_a_resize(
    gpudeck_home: Path, busy_port: int
) -> None:
    """Scale probes a port the running job may hold itself: when nothing answers there, it refuses."""
    plans = plan(LaunchOptions(argv=("sleep", "300"), nodes=2, launcher="none", master_port=busy_port))
    session = Session()
    try:
        with pytest.raises(GpudeckError) as caught:
            preflight(session, plans, held_by_job=True)
    finally:
        session.close()
    assert str(caught.value) == (
        f"pre-flight: node 0 on local cannot reach the master at 127.0.0.1:{busy_port}: "
        f"127.0.0.1:{busy_port}: Connection refused"
    )


NCCL_DEATH = (
    'if [ "$GPUDECK_NODE_RANK" = 1 ]; then echo "[Rank 1] Watchdog caught collective operation timeout: '
    'WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out." >&2; exit 6; fi; '
    'while [ ! -e peer-died ]; do sleep 0.05; done; echo "RuntimeError: connection reset by peer" >&2; exit 1'
)


@pytest.mark.slow  # two nodes to their end: ~2 s
def test_an_nccl_timeout_on_any_node_is_the_jobs_cause_with_the_preflight_hints(
    gpudeck_home: Path, workdir: Path
) -> None:
    job = gpudeck("run", "--nodes", "2", "--launcher", "none", "--", "bash", "-c", NCCL_DEATH, cwd=workdir)
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip()
    wait_for(
        lambda: json.loads(gpudeck("inspect", "--json", job_id).stdout)["nodes"][1]["state"] == "failed",
        what="node 1's end",
    )
    (workdir / "peer-died").touch()
    obj = wait_for(
        lambda: (
            (o := json.loads(gpudeck("inspect", "--json", job_id).stdout))["state"] == "failed"
            and all(n["state"] == "failed" for n in o["nodes"])
            and o
        ),
        what="the job's end",
    )
    # node 0 (shown first when nodes agree) failed of something else: the NCCL timeout explains it
    assert obj["cause"].startswith("NCCL timeout: a rank stalled or died"), obj
    assert "pre-flight: NCCL_SOCKET_IFNAME=lo carries 127.0.0.1" in obj["cause"]
    assert obj["multinode"]["hints"] == ["NCCL_SOCKET_IFNAME=lo carries 127.0.0.1 (every node)"]


# -- two SSH hosts (one sshd, two aliases) ------------------------------------------------------


@pytest.mark.slow  # two deploys over SSH and torch imported twice: ~6 s
def test_nodes_whose_torch_differs_are_refused_naming_the_node(ssh_home: SshHome, tmp_path: Path) -> None:
    # box-b's setup puts a python without torch first on PATH: the same command imports another torch
    two_boxes(ssh_home, setup_b="export PATH=/usr/bin:$PATH")
    r = gpudeck(
        "run",
        "--nodes",
        "2",
        "--host",
        "box-a,box-b",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        "--",
        "python3",
        "-m",
        "trainer",
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("gpudeck: pre-flight: node 1 on box-b: python3 cannot import torch"), r.stderr


@pytest.mark.slow  # two deploys over SSH: ~3 s
def test_two_ssh_hosts_pass_and_are_told_the_interface(ssh_home: SshHome, tmp_path: Path) -> None:
    two_boxes(ssh_home)
    r = gpudeck(
        "run",
        "--nodes",
        "2",
        "--host",
        "box-a,box-b",
        "--launcher",
        "none",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        "--",
        "true",
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "pre-flight: NCCL_SOCKET_IFNAME=lo carries 127.0.0.1 (every node)" in r.stderr
    try:
        obj = json.loads(gpudeck("inspect", "--json", r.stdout.strip(), cwd=tmp_path).stdout)
        assert [n["host"] for n in obj["nodes"]] == ["box-a", "box-b"]
    finally:
        kill_boxes_jobs(ssh_home)
