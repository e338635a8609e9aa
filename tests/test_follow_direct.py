"""The `logs -f` fast path (issue 13): the CLI writes each follow chunk on the client's reader thread
(no queue, no second thread), every byte once and the end after them; the agent looks at the journal
for the output cap's hole only where the cap could have dropped bytes."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from remote_agent.jobstate import JobView
from remote_agent.serving.output import LineWriter
from remote_agent.serving.outputhub import OutputHub, _Follow
from remote_agent.supervision.outputcap import MIN_OUTPUT_CAP, OutputCap, hole_start
from tests.support.jobs import launch
from tests.support.waiting import wait_for
from tui.remote.reconnect import ReconnectingClient
from tui.remote.transport import LocalTransport


def test_a_set_sink_gets_every_byte_on_the_reader_thread_then_the_end(agent_dir: Path, workdir: Path) -> None:
    got: list[tuple[str, bytes | None, dict | None]] = []
    done = threading.Event()

    def sink(job: str, node: str, data: bytes | None, end: dict | None) -> None:
        got.append((threading.current_thread().name, data, end))
        if end is not None:
            done.set()

    client = ReconnectingClient("local", lambda: LocalTransport(agent_dir))
    client.connect()
    try:
        client.set_output_sink(sink)
        prints = "import sys\nfor i in range(2000): print('line', i, '\\xe9' * (i % 7))\nsys.exit(5)"
        job = launch(client, workdir, [sys.executable, "-c", prints])
        client.follow(job["id"], "0", offset=0)
        assert done.wait(60), "no end pushed"
    finally:
        client.close()
    *chunks, last = got
    output = agent_dir / "jobs" / job["id"] / "0" / "output.log"
    assert b"".join(data for _, data, _ in chunks if data is not None) == output.read_bytes()
    assert last[2] is not None and last[2]["exit_code"] == 5 and all(end is None for _, _, end in chunks)
    assert {name for name, _, _ in got} == {"agent-local"}  # the client's reader: nothing handed on
    assert client.outputs.empty()


def _view_of(tmp_path: Path, spec: str) -> JobView:
    (tmp_path / "spec.json").write_text(spec)
    return JobView("20261201-000000-aaaaaa", "0", tmp_path)


def test_the_gap_floor_is_where_the_supervisors_cap_starts_its_hole(tmp_path: Path) -> None:
    for cap in (MIN_OUTPUT_CAP, 3 * MIN_OUTPUT_CAP + 12345, 1 << 30):
        follow = _Follow(_view_of(tmp_path, f'{{"argv": ["x"], "output_cap": {cap}}}'), 0)
        assert follow.gap_floor() == hole_start(cap) == OutputCap(tmp_path / "output.log", cap).head
    default = _Follow(_view_of(tmp_path, '{"argv": ["x"]}'), 0)  # the agent's default cap
    assert default.gap_floor() == OutputCap(tmp_path / "output.log", 1 << 30).head
    assert _Follow(_view_of(tmp_path, '{"argv": ["x"], "output_cap": 0}'), 0).gap_floor() == float("inf")
    assert _Follow(_view_of(tmp_path, "not json"), 0).gap_floor() == 0  # unknown: always look


def test_past_the_floor_a_hole_is_still_skipped(agent_dir: Path, workdir: Path) -> None:
    """A read reaching past the floor still asks the journal (the output cap's own test covers the
    whole path end to end; this one pins that the fast path does not swallow the check)."""
    client = ReconnectingClient("local", lambda: LocalTransport(agent_dir))
    client.connect()
    try:
        job = launch(client, workdir, [sys.executable, "-c", "print('x' * 100)"])
    finally:
        client.close()
    view = JobView(job["id"], "0", agent_dir / "jobs" / job["id"] / "0")
    follow = _Follow(view, 0)
    follow.no_gap_below = 10  # as if the cap's hole could start at byte 10
    looked: list[int] = []
    hub = OutputHub(LineWriter(io.BytesIO()))
    real_over = hub._over

    def over(sub: _Follow) -> bool:
        looked.append(sub.offset)
        return real_over(sub)

    hub._over = over  # type: ignore[method-assign]
    wait_for(lambda: view.refresh()["state"] == "exited", timeout=30, what="the job's end")
    assert hub._skip_gap(("j", "0"), follow, b"x" * 101) is False  # no hole journaled: not skipped
    assert looked == [0]
    follow.no_gap_below = 1000
    assert hub._skip_gap(("j", "0"), follow, b"x" * 101) is False
    assert looked == [0]  # below the floor: no look at the journal


@pytest.mark.slow
def test_logs_f_into_a_closed_pipe_exits_quietly_while_the_job_prints(
    gpudeck_home: Path, tmp_path: Path
) -> None:
    """`gpudeck logs -f JOB | head -1`: the write fails on the reader thread now; the CLI still
    ends at once with 0 and says nothing, and the job goes on."""
    from tests.conftest import gpudeck

    flag = tmp_path / "stop-now"
    chatty = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]):\n    print('tick', flush=True); time.sleep(0.005)\n"
    job_id = gpudeck("run", "--", sys.executable, "-c", chatty, str(flag), cwd=tmp_path).stdout.strip()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=dict(os.environ),
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"tick\n"
        proc.stdout.close()
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0 and err == b"", err
        assert "running" in gpudeck("ps", cwd=tmp_path).stdout  # the follower's end is not the job's
    finally:
        flag.touch()
        proc.kill()
