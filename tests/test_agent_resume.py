"""A client that drops mid-stream resumes with since_seq and gets exactly the missing events."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.jobs import collect, ended, journal, launch
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

COUNTER = "import time\nfor i in range(1, 301):\n    print(f'step={i} loss={1/i:.6f}', flush=True)\n    time.sleep(0.005)"


@pytest.mark.slow
def test_resume_after_a_dropped_connection_has_no_gap_and_no_duplicate(
    agent_dir: Path, workdir: Path
) -> None:
    first = AgentClient(LocalTransport(agent_dir))
    first.connect()
    job = launch(first, workdir, [sys.executable, "-c", COUNTER])
    first.tail(job["id"], "0", since_seq=0)
    before = collect(first, lambda rs: len(rs) >= 40)
    first.transport.close()  # the pipe breaks mid-stream, as a dropped connection would
    first.close()
    resume_from = before[-1]["seq"]

    second = AgentClient(LocalTransport(agent_dir))
    second.connect()
    try:
        second.tail(job["id"], "0", since_seq=resume_from)
        after = collect(second, ended, timeout=60)
    finally:
        second.close()
    seqs = [r["seq"] for r in before + after]
    assert seqs == list(range(1, len(seqs) + 1))
    assert before + after == journal(agent_dir, job["id"])
    steps = [r["values"]["step"] for r in before + after if r["kind"] == "metric"]
    assert steps == list(range(1, 301))


@pytest.mark.slow
def test_untail_stops_the_pushes(client: AgentClient, workdir: Path) -> None:
    job = launch(client, workdir, [sys.executable, "-c", COUNTER])
    client.tail(job["id"], "0", since_seq=0)
    collect(client, lambda rs: len(rs) >= 5)
    client.untail(job["id"], "0")
    import queue
    import time

    time.sleep(0.3)  # let pushes already in the pipe arrive
    while True:
        try:
            client.events.get_nowait()
        except queue.Empty:
            break
    time.sleep(0.5)
    assert client.events.empty()
    client.request("kill", job=job["id"], node="0")
