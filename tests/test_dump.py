"""Issue 34, stacks of a hung job: `gpudeck dump JOB` takes the stack of every Python process of the
job on each node — py-spy where the host has it, else the faulthandler route (SIGURG, a per-process
file under GPUDECK_STACKS_DIR) — saves it in the job's directory, journals `dumped`, and prints it;
`--show` prints the saved one; a process neither route reaches is listed with why."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_agent.stacks import faultroute
from remote_agent.stacks.take import take_dump
from tests.conftest import gpudeck
from tests.support.jobs import journal
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

ROOT = Path(__file__).resolve().parent.parent
# The opt-in the README documents, word for word, then a stand-in for a collective that never ends.
SPINS = (
    "import faulthandler, os, signal\n"
    "d = os.environ.get('GPUDECK_STACKS_DIR')\n"
    "if d:\n"
    "    f = open(os.path.join(d, '%d.txt' % os.getpid()), 'a')\n"
    "    faulthandler.register(signal.SIGURG, file=f, all_threads=True, chain=False)\n"
    "import time\n"
    "for i in range(5):\n"
    "    print(f'step={i} loss=0.5', flush=True)\n"
    "    time.sleep(0.05)\n"
    "def spin_in_a_collective_that_never_ends():\n"
    "    while True:\n"
    "        sum(range(1000))\n"
    "spin_in_a_collective_that_never_ends()\n"
)
FUNCTION = "spin_in_a_collective_that_never_ends"


@pytest.fixture
def spinning(gpudeck_home: Path, agent_dir: Path, workdir: Path) -> Iterator[str]:
    job = gpudeck("run", "--name", "spins", "--", sys.executable, "-c", SPINS, cwd=workdir).stdout.strip()
    wait_for(
        lambda: any(r.get("kind") == "metric" for r in journal(agent_dir, job)), what="the job's first step"
    )
    yield job
    gpudeck("kill", job, cwd=workdir)


def dumped(agent_dir: Path, job: str) -> list[dict]:
    return [r["data"] for r in journal(agent_dir, job) if r.get("event") == "dumped"]


@pytest.mark.slow  # a real job, dumped by both routes
def test_dump_holds_the_spinning_function_by_py_spy_and_by_faulthandler(
    spinning: str, agent_dir: Path, workdir: Path
) -> None:
    r = gpudeck("dump", spinning, cwd=workdir)
    assert r.returncode == 0, r.stderr
    assert FUNCTION in r.stdout and "1 stack(s)" in r.stdout
    header = next(line for line in r.stdout.splitlines() if line.startswith("=== "))
    assert header.startswith("=== no rank · pid ") and header.endswith("· py-spy")  # a -c program: one line
    off = gpudeck("dump", spinning, "--json", cwd=workdir, env={"GPUDECK_PY_SPY": "off"})
    [node] = json.loads(off.stdout)["nodes"]
    assert node["error"] is None and node["stacks"] == 1 and node["unreached"] == 0
    assert FUNCTION in node["text"] and "· faulthandler" in node["text"]
    assert f'File "<string>", line 12 in {FUNCTION}' in node["text"]
    saved = Path(node["path"])
    assert saved.read_text() == node["text"] and saved.parent.name == "dumps"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600 and stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    events = wait_for(lambda: dumped(agent_dir, spinning)[1:], what="both dumps journaled")
    assert events[-1] == {"path": str(saved), "stacks": 1, "unreached": 0, "ranks": [], "by": "user"}
    shown = gpudeck("dump", spinning, "--show", cwd=workdir)
    assert shown.returncode == 0 and shown.stdout.startswith(node["text"])  # the latest, not a new one
    assert len(list(saved.parent.glob("*.txt"))) == 2


@pytest.mark.slow
def test_read_only_refuses_taking_a_dump_but_shows_the_saved_one(spinning: str, workdir: Path) -> None:
    refused = gpudeck("--read-only", "dump", spinning, cwd=workdir)
    assert refused.returncode == 2 and "refused: --read-only" in refused.stderr
    nothing = gpudeck("--read-only", "dump", spinning, "--show", cwd=workdir)
    assert nothing.returncode == 1 and "no dump saved" in nothing.stderr
    assert len(nothing.stderr.strip().splitlines()) == 1
    assert gpudeck("dump", spinning, cwd=workdir).returncode == 0
    assert FUNCTION in gpudeck("--read-only", "dump", spinning, "--show", cwd=workdir).stdout


@pytest.mark.parametrize("ref", ["../../etc/passwd", "x; rm -rf ~", "20991231-000000-ffffff"])
def test_a_hostile_or_unknown_job_is_one_line(gpudeck_home: Path, workdir: Path, ref: str) -> None:
    r = gpudeck("dump", ref, cwd=workdir)
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1 and not r.stdout


def test_the_agent_refuses_a_bad_request_in_one_line(client: AgentClient) -> None:
    for args, said in (
        ({"job": "../../etc"}, "not a job id"),
        ({"job": "20991231-000000-ffffff"}, "unknown job"),
        ({"job": "20991231-000000-ffffff", "node": "../x"}, "not a node name"),
    ):
        with pytest.raises(Exception, match=said):
            client.request("dump", **args)


def test_a_slurm_jobs_processes_are_not_looked_for_on_the_login_node(
    client: AgentClient, agent_dir: Path
) -> None:
    """Its supervisor's pid is a compute node's: here it may be anyone's process."""
    job = "20991231-000000-abcdef"
    node = agent_dir / "jobs" / job / "0"
    node.mkdir(parents=True)
    spec = {
        "id": job,
        "name": "s",
        "node": "0",
        "argv": ["true"],
        "workdir": "/",
        "placement": {"kind": "slurm"},
    }
    (node / "spec.json").write_text(json.dumps(spec))
    (node / "events.jsonl").write_text(
        json.dumps({"seq": 1, "t": 1.0, "kind": "state", "state": "running", "supervisor_pid": os.getpid()})
        + "\n"
    )
    with pytest.raises(Exception, match="a Slurm job's processes run on its compute nodes"):
        client.request("dump", job=job, node="0")


def _sleeper(stacks: Path, opt_in: bool) -> subprocess.Popen[bytes]:
    code = (
        "import sys, time\n"
        + ("from trainer.stacks import register\nassert register()\n" if opt_in else "")
        + "def wait_here():\n    print('ready', flush=True)\n    time.sleep(60)\nwait_here()\n"
    )
    env = {**os.environ, "GPUDECK_STACKS_DIR": str(stacks), "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    return p


def test_the_faulthandler_route_reaches_only_processes_that_opted_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDECK_PY_SPY", "off")
    stacks = faultroute.make_stacks_dir(tmp_path)
    assert stacks is not None
    (stacks / "999999999.txt").touch()  # a loader worker's, long gone and silent: pruned
    (stacks / "999999998.txt").write_text("Thread 0x1 (most recent call first):\n")  # said something: kept
    opted, other = _sleeper(stacks, True), _sleeper(stacks, False)
    try:
        assert faultroute.catches(opted.pid) and not faultroute.catches(other.pid)
        assert stat.S_IMODE((stacks / f"{opted.pid}.txt").stat().st_mode) == 0o600  # trainer/stacks.py
        record = take_dump(tmp_path, "j", "0", [opted.pid, other.pid])
        [stack] = record["stacks"]
        assert stack["pid"] == opted.pid and stack["route"] == "faulthandler" and "wait_here" in stack["text"]
        [missed] = record["unreached"]
        assert missed["pid"] == other.pid and "no py-spy on this host" in missed["why"]
        assert "does not catch SIGURG" in missed["why"]
        assert other.poll() is None  # never signalled: it is alive
        assert sorted(p.name for p in stacks.iterdir()) == sorted(["999999998.txt", f"{opted.pid}.txt"])
    finally:
        for p in (opted, other):
            p.send_signal(signal.SIGKILL)
            p.wait()


def test_py_spy_refused_is_said_and_the_faulthandler_route_takes_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusing = tmp_path / "py-spy"  # what py-spy prints where ptrace is not permitted
    refusing.write_text("#!/bin/sh\necho 'Error: Permission Denied (os error 13)' >&2\nexit 1\n")
    refusing.chmod(0o755)
    monkeypatch.setenv("GPUDECK_PY_SPY", str(refusing))
    stacks = faultroute.make_stacks_dir(tmp_path)
    assert stacks is not None
    opted, other = _sleeper(stacks, True), _sleeper(stacks, False)
    try:
        record = take_dump(tmp_path, "j", "0", [opted.pid, other.pid])
        assert [s["route"] for s in record["stacks"]] == ["faulthandler"]
        [missed] = record["unreached"]
        assert "Permission Denied" in missed["why"] and "not permitted" in missed["why"]
        assert f"pid {other.pid}" in record["text"] and "=== not reached" in record["text"]
    finally:
        for p in (opted, other):
            p.send_signal(signal.SIGKILL)
            p.wait()


def test_a_process_that_is_not_python_is_listed_not_dumped(tmp_path: Path) -> None:
    p = subprocess.Popen(["sleep", "60"])
    try:
        record = take_dump(tmp_path, "j", "0", [p.pid])
        assert record["stacks"] == [] and record["unreached"][0]["why"] == "not a Python process"
    finally:
        p.kill()
        p.wait()
