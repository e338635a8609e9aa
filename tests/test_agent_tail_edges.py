"""`tail` over a bare serve: the first pushed seq is since_seq + 1, foreign bytes in a journal never
reach the wire, a negative since_seq is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.waiting import wait_for
from tests.test_agent_serve import RawServe, raw  # noqa: F401,F811  (the fixture)
from tui.remote.client import AgentClient


def pushed(lines: list[dict], job_id: str) -> list[dict]:
    return [
        r
        for line in lines
        if line.get("push") == "events" and line.get("job") == job_id
        for r in line["events"]
    ]


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_tail_starts_after_since_seq_and_skips_foreign_lines(
    raw: RawServe,  # noqa: F811
    client: AgentClient,
    agent_dir: Path,
    workdir: Path,
) -> None:
    job = launch(client, workdir, ["bash", "-c", "for i in 1 2 3; do echo step=$i loss=0.$i; done"])
    done = wait_state(client, job["id"], {"exited"})
    other = launch(client, workdir, ["bash", "-c", "echo step=1 loss=0.1"])
    last = wait_state(client, other["id"], {"exited"})["last_seq"]
    with open(agent_dir / "jobs" / other["id"] / "0" / "events.jsonl", "ab") as f:
        f.write(b"garbage that is not a record\n")
    since = done["last_seq"] - 2
    raw.wait_lines(1)
    raw.send(
        b'{"id": 1, "op": "tail", "job": "%s", "node": "0", "since_seq": %d}\n' % (job["id"].encode(), since)
    )
    raw.send(b'{"id": 2, "op": "tail", "job": "%s", "node": "0", "since_seq": -1}\n' % job["id"].encode())
    lines = raw.wait_lines(4)
    records = pushed(raw.wait_lines(4), job["id"])
    assert [r["seq"] for r in records] == [since + 1, since + 2]
    answers = {line.get("id"): line for line in lines if "id" in line}
    assert answers[1]["ok"] and not answers[2]["ok"] and "since_seq" in answers[2]["error"]
    # From 0, the whole journal comes: every record once, in order; the foreign line never.
    raw.send(b'{"id": 4, "op": "tail", "job": "%s", "node": "0", "since_seq": 0}\n' % other["id"].encode())
    wait_for(lambda: len(pushed(raw.lines, other["id"])) >= last, what="the other job's journal")
    assert [r["seq"] for r in pushed(raw.lines, other["id"])] == list(range(1, last + 1))
