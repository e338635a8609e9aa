"""Dense journals (`points` lines) read exactly as the one-record-per-line format by every reader.

Two agent dirs hold the same job: one journal as the writer writes it now (runs of same-named
points in `points` lines), one with the very same records one per line as before (bounded_line of
each record: the old writer's bytes). Every reader must see the same thing in both; a tail resumed
from a seq inside a `points` line gets every later point exactly once.
"""

from __future__ import annotations

import io
import json
import queue
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from remote_agent.jobstate import JobView
from remote_agent.storage.journal import JournalReader, JournalWriter, bounded_line, read_all
from remote_agent.storage.records import expand_all, lines_after_seq
from remote_agent.supervision.lostjob import read_lost_job
from tui.commands.metrics import _print_text
from tui.cost.runs import fold
from tui.fleet.model import Fleet
from tui.remote.client import AgentClient, lines_after
from tui.remote.recording import Recorder
from tui.remote.replay import Recording
from tui.remote.transport import LocalTransport

JOB = "20260101-000000-abcdef"
ODD = [  # unicode, non-finite, nested values, separators and quotes inside strings: all in runs
    {"step": 1, "loss": float("nan"), "note": "a,b"},
    {"step": 2, "loss": float("inf"), "note": '"],[":'},
    {"step": 3, "loss": -0.0, "note": "損失 🔥\u2028"},
    {"step": 4, "loss": [1, {"x": "}{"}], "note": None},
]


def _entries() -> list[list[tuple[str, dict[str, Any]]]]:
    """The bursts a supervisor would write: plain floods, odd values, other names, other kinds."""
    bursts: list[list[tuple[str, dict[str, Any]]]] = [[("state", {"state": "starting", "supervisor_pid": 1})],
                                                      [("state", {"state": "running", "pid": 2})]]  # fmt: skip
    for start in (1, 301, 601):
        bursts.append(
            [("metric", {"values": {"step": i, "loss": round(1 / i, 6)}}) for i in range(start, start + 300)]
        )
    bursts.append([("metric", {"values": v}) for v in ODD])
    bursts.append([("heartbeat", {"output_offset": 1234})])
    hf = [
        {"loss": 0.5 - i / 1000, "grad_norm": 1.25, "learning_rate": 4.5e-05, "epoch": i / 100}
        for i in range(20)
    ]
    evals = [{"val_loss": 0.7, "epoch": 1.0}]
    bursts.append([("metric", {"values": v}) for v in hf[:10] + evals + hf[10:]])
    bursts.append([("event", {"event": "resized", "data": {"from": 1, "to": 2, "why": "a,b"}}),
                   ("metric", {"values": {"step": 901, "loss": 0.001}})])  # fmt: skip
    bursts.append([("gpu", {"gpus": [{"index": 0, "util": 50, "mem_used_mib": 100}]})])
    bursts.append([("metric", {"values": {"step": i, "loss": 1e-3}}) for i in range(902, 905)])
    bursts.append([("state", {"state": "exited", "exit_code": 0, "signal": None})])
    return bursts


def _job_dir(agent: Path) -> Path:
    directory = agent / "jobs" / JOB / "0"
    directory.mkdir(parents=True)
    spec = {"id": JOB, "name": "dense", "node": "0", "argv": ["true"], "workdir": "/", "env": {},
            "setup": [], "grace": 60.0, "created_at": 1.0, "stop_signal": "SIGTERM"}  # fmt: skip
    (directory / "spec.json").write_text(json.dumps(spec))
    (directory / "lock").touch()
    (directory / "output.log").write_bytes(b"x" * 2000)
    return directory


@pytest.fixture(scope="module")
def journals(tmp_path_factory) -> dict[str, Path]:
    """{"dense": agent dir, "old": agent dir}: the same records in both formats."""
    root = tmp_path_factory.mktemp("journals")
    dense, old = _job_dir(root / "dense"), _job_dir(root / "old")
    writer = JournalWriter(dense / "events.jsonl")
    records = [r for burst in _entries() for r in writer.append_many(burst)]
    writer.close()
    (old / "events.jsonl").write_text("".join(bounded_line(r) + "\n" for r in records), encoding="utf-8")
    text = (dense / "events.jsonl").read_text(encoding="utf-8")
    assert text.count('"kind":"points"') >= 5 and text.count("\n") < len(records) // 10  # it is dense
    return {"dense": root / "dense", "old": root / "old"}


def _tail_records(client: AgentClient, since: int = 0, last: int | None = None) -> list[dict[str, Any]]:
    target = last if last is not None else client.tail(JOB, "0", since_seq=since)
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while not got or got[-1]["seq"] < target:
        assert time.monotonic() < deadline, f"tail stopped at {got[-1]['seq'] if got else since} of {target}"
        try:
            _, _, records = client.events.get(timeout=0.5)
        except queue.Empty:
            continue
        got.extend(records)
    return got


def _via_client(agent: Path) -> list[dict[str, Any]]:
    with AgentClient(LocalTransport(agent)) as client:
        client.connect()
        return _tail_records(client)


def _via_replay(agent: Path) -> list[dict[str, Any]]:
    """A recorded session tailing the journal, replayed: what the replay transport's client gets."""
    path = agent.parent / f"{agent.name}.rec.jsonl"
    recorder = Recorder(path)
    client = AgentClient(recorder.wrap(LocalTransport(agent)))
    client.connect()
    last = client.tail(JOB, "0", since_seq=0)
    _tail_records(client, last=last)
    client.close()
    recorder.close()
    replay = AgentClient(Recording.load(path).transport("local", speed=0))
    replay.connect()
    try:
        replay.tail(JOB, "0", since_seq=0)
        return _tail_records(replay, last=last)
    finally:
        replay.close()


def _metrics_output(agent: Path, as_json: bool) -> str:
    """`metrics` as the CLI prints it: journal pushes (tail text) through the client, then reshaped."""
    with AgentClient(LocalTransport(agent)) as client:
        client.connect()
        last = client.tail(JOB, "0", since_seq=0, text=True)
        seen = 0
        buffer = io.BytesIO()
        while seen < last:
            _, _, seen, data = client.journals.get(timeout=30)
            buffer.write(data)
    out_bytes = io.BytesIO()
    wrapper = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
    with redirect_stdout(wrapper):
        _print_text(buffer.getvalue().decode("utf-8"), "0", as_json)
    wrapper.flush()
    return out_bytes.getvalue().decode("utf-8")


def _fleet(agent: Path) -> Any:
    fleet = Fleet(clock=lambda: 0.0)
    fleet.apply_events("local", JOB, "0", _via_client(agent))
    job = fleet.jobs[JOB]
    series = {name: (list(s._rx), list(s._ry), list(s._hx), list(s._hy)) for name, s in job.series.items()}
    return repr(
        (job.state, job.last, job.step, series, fleet.bad_records, list(job.events))
    )  # repr: nan == nan


def _cost_run(agent: Path) -> Any:
    return repr(fold("local", {"id": JOB, "node": "0"}, _via_client(agent)))


def _job_object(agent: Path) -> Any:
    directory = agent / "jobs" / JOB / "0"
    first = JobView(JOB, "0", directory).refresh()
    cached = JobView(JOB, "0", directory).refresh()  # the summary cache written by the first
    assert cached == first
    return first


def _lost_job(agent: Path) -> Any:
    return vars(read_lost_job(agent / "jobs" / JOB / "0" / "events.jsonl"))


SLOW = (
    "tail → client events",
    "recording → replay",
    "fleet model (TUI series)",
    "cost fold",
    "metrics --json",
    "metrics",
)
READERS: dict[str, Callable[[Path], Any]] = {
    "journal reader (agent side)": lambda agent: read_all(agent / "jobs" / JOB / "0" / "events.jsonl"),
    "job object: listing, inspect, summary cache": _job_object,
    "adoption's lost-job read": _lost_job,
    "tail → client events": _via_client,
    "recording → replay": _via_replay,
    "fleet model (TUI series)": _fleet,
    "cost fold": _cost_run,
    "metrics --json": lambda agent: _metrics_output(agent, True),
    "metrics": lambda agent: _metrics_output(agent, False),
}


@pytest.mark.parametrize(
    "reader", [pytest.param(r, marks=pytest.mark.slow) if r in SLOW else r for r in READERS]
)  # ~1 s: agents
def test_every_reader_reads_dense_and_old_journals_alike(journals: dict[str, Path], reader: str) -> None:
    read = READERS[reader]
    dense, old = read(journals["dense"]), read(journals["old"])
    assert dense == old
    assert dense  # (it read something)


@pytest.mark.slow  # ~1 s: an agent
def test_the_metrics_output_holds_every_point(journals: dict[str, Path]) -> None:
    lines = _metrics_output(journals["dense"], True).splitlines()
    points = [json.loads(line) for line in lines if "values" in json.loads(line)]
    assert len(points) == 900 + len(ODD) + 21 + 1 + 3
    assert [p["values"]["step"] for p in points[:900]] == list(range(1, 901))


@pytest.mark.slow  # ~2 s: five agents
def test_a_tail_resumed_inside_a_points_line_gets_each_later_point_once(journals: dict[str, Path]) -> None:
    everything = read_all(journals["dense"] / "jobs" / JOB / "0" / "events.jsonl")
    last = everything[-1]["seq"]
    for since in (3, 150, 302, 903, last - 1):  # inside runs, at a run's edges, near the end
        with AgentClient(LocalTransport(journals["dense"])) as client:
            client.connect()
            got = _tail_records(client, since=since)
        assert [r["seq"] for r in got] == list(range(since + 1, last + 1))
        assert got == [r for r in everything if r["seq"] > since]


def test_journal_text_cut_inside_a_points_line_keeps_each_later_point_once(journals: dict[str, Path]) -> None:
    raw = (journals["dense"] / "jobs" / JOB / "0" / "events.jsonl").read_bytes()
    everything = read_all(journals["dense"] / "jobs" / JOB / "0" / "events.jsonl")
    for since in (0, 2, 3, 150, 302, 600, 901):
        kept = lines_after(raw, since)
        again = expand_all(json.loads(line) for line in kept.splitlines())
        assert again == [r for r in everything if r["seq"] > since]
        assert lines_after_seq(raw.splitlines(), since) == kept.splitlines()


MALFORMED = [
    b'{"seq":3,"last":4,"t":1,"kind":"points","names":["a"],"rows":[[1]]}',  # one row for two seqs
    b'{"seq":3,"last":3,"t":1,"kind":"points","names":[["a"]],"rows":[[1]]}',  # a name that is no string
    b'{"seq":3,"last":4,"t":1,"kind":"points","names":["a","b"],"rows":[[1,2],[3]]}',  # a short row
    b'{"seq":3,"last":3,"t":1,"kind":"points","names":"a","rows":[[1]]}',
    b'{"seq":3,"last":3,"t":1,"kind":"points","names":["a"],"rows":{"x":1}}',
]


@pytest.mark.parametrize("bad", MALFORMED)
def test_a_malformed_points_line_is_skipped_and_counted(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "events.jsonl"
    good = b'{"seq":5,"t":1,"kind":"metric","values":{"a":1}}\n'
    path.write_bytes(
        b'{"seq":1,"last":2,"t":1,"kind":"points","names":["a"],"rows":[[1],[2]]}\n' + bad + b"\n" + good
    )
    reader = JournalReader(path)
    assert [r["seq"] for r in reader.read_new()] == [1, 2, 5]
    assert reader.skipped == 1
    assert expand_all([json.loads(bad)]) == []
