"""Issue 34: the client's straggler / likely-hang judgement reaches the named node's journal
through the `pace_note` op; the supervisor journals only what changed (supervision/pace_note.py),
and the job object reads it back; bad notes are refused with one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from remote_agent.supervision.pace_note import PaceNotes, take_note, write_note
from tests.support.jobs import job, journal, launch, wait_state
from tests.support.waiting import wait_for
from tui.actions.pace import notes
from tui.remote.client import AgentClient, AgentError


def test_only_changes_are_journaled() -> None:
    p = PaceNotes()
    assert p.records({"straggler": None, "hang": None}) == []
    assert p.records({"straggler": "node 1 slow", "hang": None}) == [("straggler", {"why": "node 1 slow"})]
    assert p.records({"straggler": "node 1 slower now", "hang": None}) == []  # still the straggler
    assert p.records({"straggler": None, "hang": "node 1 stopped"}) == [
        ("unstraggler", {"why": "caught up with the other nodes"}),
        ("likely_hang", {"why": "node 1 stopped"}),
    ]
    assert p.records({"straggler": None, "hang": "node 1 stopped"}) == []


def test_a_note_is_read_once_and_a_bad_one_dropped(tmp_path: Path) -> None:
    path = tmp_path / "pace.json"
    write_note(path, "slow", None)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert take_note(path) == {"straggler": "slow", "hang": None}
    assert take_note(path) is None and not path.exists()
    path.write_text('{"straggler": "\\u001b[31m"}')
    assert take_note(path) is None


def test_the_client_notes_only_nodes_whose_journal_differs() -> None:
    from remote_agent.pace.hang import Hang
    from remote_agent.pace.straggler import Straggler

    nodes = [
        {"host": "a", "id": "j", "node": "0", "state": "running", "straggler": None, "likely_hang": None},
        {"host": "b", "id": "j", "node": "1", "state": "running", "straggler": None, "likely_hang": None},
    ]
    slow = [Straggler("1", "steps/s", 0.5, 2.0, 150.0, "node 1 at 0.5 steps/s")]
    assert notes(nodes, slow, None) == [
        {"host": "b", "job": "j", "node": "1", "straggler": "node 1 at 0.5 steps/s", "hang": None}
    ]
    nodes[1]["straggler"] = "node 1 at 0.5 steps/s"
    assert notes(nodes, slow, None) == []  # journaled already
    assert [n["node"] for n in notes(nodes, [], None)] == ["1"]  # caught up: unstraggler
    hang = Hang("0", 20, "node 0 stopped at step 20; node 1 waits at step 21")
    assert [(n["node"], n["hang"]) for n in notes(nodes, slow, hang)] == [("0", hang.why)]


def test_the_op_reaches_the_supervisor_and_the_job_object(
    client: AgentClient, agent_dir: Path, workdir: Path
) -> None:
    obj = launch(client, workdir, [sys.executable, "-c", "import time; time.sleep(60)"])
    wait_state(client, obj["id"], {"running"})
    with pytest.raises(AgentError, match="straggler: expected null or up to 300 printable"):
        client.request("pace_note", job=obj["id"], node="0", straggler="x" * 301, hang=None)
    client.request("pace_note", job=obj["id"], node="0", straggler="node 0 at 1 steps/s", hang=None)
    wait_for(lambda: job(client, obj["id"])["straggler"] == "node 0 at 1 steps/s", what="the straggler")
    client.request("pace_note", job=obj["id"], node="0", straggler=None, hang=None)
    wait_for(lambda: job(client, obj["id"])["straggler"] is None, what="cleared")
    said = [r["event"] for r in journal(agent_dir, obj["id"]) if r.get("kind") == "event"]
    assert said.count("straggler") == 1 and said.count("unstraggler") == 1, said
    client.request("kill", job=obj["id"], node="0", timeout=30)
