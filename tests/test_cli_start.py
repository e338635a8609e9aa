"""What a CLI call loads before it answers: its own verb's module, and for a local listing no agent
process at all (`ps` of 1,000 ended jobs was mostly interpreter and import start-up)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remote_agent.storage.journal import JournalWriter
from tests.conftest import ROOT
from tui.cli import build_parser, verb_of
from tui.remote.client import AgentClient
from tui.remote.local_jobs import local_jobs
from tui.remote.transport import LocalTransport
from tui.session import Session


def test_the_verb_is_the_first_word_after_the_global_options() -> None:
    assert verb_of(["ps", "--all"]) == "ps"
    assert verb_of(["--record", "tape.jsonl", "--read-only", "metrics", "job"]) == "metrics"
    assert (
        verb_of(["--replay", "ps", "--replay-speed", "0", "logs", "j"]) == "logs"
    )  # "ps" is --replay's file
    assert verb_of(["--help"]) is None and verb_of([]) is None


@pytest.mark.slow  # a fresh interpreter
def test_a_verb_loads_only_its_own_command_module() -> None:
    code = ("import sys; from tui.cli import build_parser; build_parser('ps').parse_args(['ps', '--all']); "
            "import tui.commands.ps; from tui.actions.find import list_jobs; "
            "print(sorted(m for m in sys.modules if m.startswith(('tui.commands.', 'tui.actions.', 'tui.policy', 'tui.cloud', 'tui.cost'))))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stdout.replace("'", '"')))
    # + what ps shows of issue 34: the pace judgement of a multi-node job and a failed job's hold
    # (small modules: the hold's duration parser loads the launch options only when it parses)
    assert loaded == {
        "tui.commands.ps",
        "tui.actions.agents",
        "tui.actions.fanout",  # the hosts asked at once, on plain threads (no concurrent.futures)
        "tui.actions.find",
        "tui.actions.hold",
        "tui.actions.pace",
        "tui.commands.pace_text",
    }


def test_the_whole_parser_still_knows_every_verb() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "verb")
    assert {"run", "ps", "inspect", "logs", "metrics", "stop", "cost", "policy", "cloud", "watch"} <= set(
        sub.choices
    )  # type: ignore[attr-defined]


def _ended_job(agent_dir: Path, job_id: str, name: str, workdir: Path) -> None:
    directory = agent_dir / "jobs" / job_id / "0"
    directory.mkdir(parents=True)
    spec = {"id": job_id, "name": name, "node": "0", "argv": ["true"], "workdir": str(workdir), "env": {},
            "setup": [], "grace": 60.0, "created_at": time.time(), "stop_signal": "SIGTERM"}  # fmt: skip
    (directory / "spec.json").write_text(json.dumps(spec))
    (directory / "lock").touch()
    journal = JournalWriter(directory / "events.jsonl")
    journal.append("state", state="starting", supervisor_pid=1)
    journal.append("state", state="running", pid=2)
    journal.append("metric", values={"step": 1, "loss": 0.5})
    journal.append("state", state="exited", exit_code=0, signal=None)
    journal.close()


def test_the_local_listing_in_process_is_the_agents_answer(agent_dir: Path, tmp_path: Path) -> None:
    for i in range(3):
        _ended_job(agent_dir, f"20260101-00000{i}-00000{i}", f"job{i}", tmp_path)
    (agent_dir / "jobs" / "20260101-000009-000009" / "0").mkdir(
        parents=True
    )  # a launch writing it: no spec yet
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    try:
        answer = client.request("jobs")
    finally:
        client.close()
    assert local_jobs() == answer
    # the launch still writing its dir is left out (listed once named, or `lost` if it never is)
    assert [j["name"] for j in answer["jobs"]] == ["job2", "job1", "job0"]


def test_a_local_listing_starts_no_agent(gpudeck_home: Path, tmp_path: Path) -> None:
    _ended_job(gpudeck_home / "local-agent", "20260101-000000-000000", "job0", tmp_path)
    session = Session()
    try:
        jobs = session.request("local", "jobs")["jobs"]
        assert [j["state"] for j in jobs] == ["exited"]
        assert session._clients == {}  # no serve was started for it
    finally:
        session.close()
