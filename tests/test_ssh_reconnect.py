"""Breaking the SSH link under a live stream: cuts and a frozen peer lose and repeat nothing.

A cut kills the per-connection sshd processes (what a dropped network looks like to both ends); a
freeze SIGSTOPs them (TCP still ACKs: only heartbeats and read timeouts notice).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.jobs import alive, collect, ended, journal
from tests.support.sshd import SshHome, serve_pids
from tests.support.waiting import wait_for
from tui.remote.reconnect import ReconnectingClient
from tui.session import transport_for

# Slow as a whole: cuts, freezes and floods over a real sshd: seconds each.
pytestmark = pytest.mark.slow

# Prints a metric line every 3 ms (and raw non-UTF-8 bytes now and then) until the flag file exists.
STREAM = r"""
import json, os, sys, time
flag, step = sys.argv[1], 0
while not os.path.exists(flag):
    step += 1
    print(json.dumps({"step": step, "loss": round(1.0 / step, 6)}), flush=True)
    if step % 50 == 0:
        sys.stdout.buffer.write(b"raw \xff\xfe bytes %d\n" % step); sys.stdout.flush()
    time.sleep(0.003)
print("done", flush=True)
"""


def _cli(*args: str, stdout: Path, stderr: Path, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", *args],
        stdout=open(stdout, "wb"),
        stderr=open(stderr, "wb"),  # noqa: SIM115
        cwd=cwd,
        env=dict(os.environ),
    )


def test_ten_cuts_mid_stream_lose_and_repeat_nothing(ssh_home: SshHome, tmp_path: Path) -> None:
    from tests.conftest import gpudeck

    ssh_home.trust()
    ssh_home.add_host()
    ssh_home.ssh_settings(alive_timeout=2.0, backoff_initial=0.05, backoff_max=0.3)
    flag = tmp_path / "stop-now"
    job_id = gpudeck(
        "run", "--host", "box", "--", sys.executable, "-c", STREAM, str(flag), cwd=tmp_path
    ).stdout.strip()
    assert len(job_id) == 22
    logs_out, metrics_out = tmp_path / "logs.out", tmp_path / "metrics.out"
    logs = _cli("logs", "-f", job_id, stdout=logs_out, stderr=tmp_path / "logs.err", cwd=tmp_path)
    metrics = _cli(
        "metrics", "-f", "--json", job_id, stdout=metrics_out, stderr=tmp_path / "metrics.err", cwd=tmp_path
    )
    server = ssh_home.server
    try:
        for _ in range(10):
            sizes = (logs_out.stat().st_size, metrics_out.stat().st_size)
            # Both followers connected and streaming again since the last cut, then cut them.
            wait_for(
                lambda: len(serve_pids(ssh_home.agent_dir)) >= 2, timeout=30, what="both followers connected"
            )
            wait_for(
                lambda s=sizes: logs_out.stat().st_size > s[0] and metrics_out.stat().st_size > s[1],
                timeout=30,
                what="output flowing",
            )
            old = serve_pids(ssh_home.agent_dir)
            assert server.cut() >= 2
            wait_for(
                lambda o=old: not [p for p in o if alive(p)],
                timeout=5,
                what="the cut serves to exit within 5 s",
            )
        flag.touch()
        assert logs.wait(timeout=60) == 0
        assert metrics.wait(timeout=60) == 0
    finally:
        for proc in (logs, metrics):
            proc.kill()
    job_dir = ssh_home.agent_dir / "jobs" / job_id / "0"
    assert logs_out.read_bytes() == (job_dir / "output.log").read_bytes()  # every byte, exactly once
    points = [json.loads(line) for line in metrics_out.read_text().splitlines()]
    expected = [r["values"] for r in journal(ssh_home.agent_dir, job_id) if r["kind"] == "metric"]
    assert [p["values"] for p in points] == expected and len(expected) > 100
    said = (
        tmp_path / "logs.err"
    ).read_text()  # every cut is said: a lost connection, or a failed try mid-way
    assert said.count("connection lost") + said.count("reconnect failed") >= 10 and "reconnected" in said
    wait_for(lambda: not serve_pids(ssh_home.agent_dir), timeout=5, what="no serve left behind")


def test_a_frozen_peer_is_noticed_and_the_stream_resumes(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    ssh_home.ssh_settings(alive_timeout=2.0, backoff_initial=0.05, backoff_max=0.3)
    news: list[str] = []
    client = ReconnectingClient(
        "box",
        lambda: transport_for("box"),
        backoff_initial=0.05,
        backoff_max=0.3,
        on_status=lambda host, line: news.append(line),
    )
    first_serve = client.connect()["pid"]
    flag = tmp_path / "stop-now"
    spec = {
        "id": _job_id(),
        "name": "frozen",
        "node": "0",
        "argv": [sys.executable, "-c", STREAM, str(flag)],
        "workdir": str(tmp_path),
    }
    client.request("launch", timeout=30, spec=spec)
    client.tail(spec["id"], "0", since_seq=0)
    frozen: list[int] = []
    try:
        got = collect(client, lambda rs: len(rs) > 50, timeout=30)  # type: ignore[arg-type]
        frozen = ssh_home.server.session_tree()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        # alive_timeout 2 s + backoff, not TCP's minutes (the wait's bound), and said why:
        wait_for(
            lambda: client.reconnects >= 1, timeout=30, what="the freeze noticed and a new connection made"
        )
        assert any("no word from the agent" in line for line in news), news
        got += collect(client, lambda rs: len(rs) > 100, timeout=30)  # type: ignore[arg-type]
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    flag.touch()
    got += collect(client, lambda rs: ended(got + rs), timeout=30)  # type: ignore[arg-type]
    client.close()
    assert [r["seq"] for r in got] == list(range(1, len(got) + 1))  # no gap, no duplicate
    assert got == journal(ssh_home.agent_dir, spec["id"])
    wait_for(
        lambda: not alive(first_serve), timeout=10, what="the frozen connection's serve to exit after SIGCONT"
    )


def test_requests_do_not_wait_behind_a_flood_and_two_clients_keep_apart(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    # A flood that goes on until killed: a request's answer must overtake it whatever the machine's
    # load (a flood that could end first would make "overtook" a race).
    flood = "import sys, itertools\nw = sys.stdout.write\nfor i in itertools.count(1):\n    w(f'step={i} loss={1.0 / i:.6f}\\n')\n"
    clients = [ReconnectingClient("box", lambda: transport_for("box")) for _ in range(2)]
    try:
        for c in clients:
            c.connect()
        spec = {
            "id": _job_id(),
            "name": "flood",
            "node": "0",
            "argv": [sys.executable, "-c", flood],
            "workdir": str(tmp_path),
        }
        clients[0].request("launch", timeout=30, spec=spec)
        clients[0].tail(spec["id"], "0", since_seq=0)  # nobody drains this queue: a slow consumer
        wait_for(lambda: clients[0].events.qsize() > 5, timeout=30, what="the flood streaming")
        for c in clients:
            c.request("jobs", timeout=30)
        # The first client's reply overtook its own flood: records kept coming after it.
        with clients[0].events.mutex:
            at_reply = len(clients[0].events.queue)
        wait_for(
            lambda: clients[0].events.qsize() > at_reply,
            timeout=30,
            what="the flood going on after the reply",
        )
        clients[1].tail(spec["id"], "0", since_seq=0)
        got = collect(clients[1], lambda rs: len(rs) >= 5000, timeout=60)  # type: ignore[arg-type]
        assert [r["seq"] for r in got] == list(range(1, len(got) + 1))  # its own stream: whole, in order
        # (the flood is ended by the fixture's teardown: a request on the flooded clients could
        # wait behind their unread streams on a loaded machine)
    finally:
        for c in clients:
            c.close()


def _job_id() -> str:
    from remote_agent.names import new_job_id

    return new_job_id()
