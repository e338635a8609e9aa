"""The journal on its own: gap-free seq, torn last lines, incremental readers, the fold cache."""

from __future__ import annotations

import json
from pathlib import Path

from remote_agent.jobstate import CACHE_NAME, JobView
from remote_agent.storage.journal import JournalReader, JournalWriter, read_all, seq_of
from remote_agent.storage.jsonio import dumps, loads_object


def test_seq_is_gap_free_across_writers_and_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    writer = JournalWriter(path)
    writer.append("state", state="starting")
    writer.append_many(
        [("metric", {"values": {"loss": 1.0}}), ("metric", {"values": {"loss": float("nan")}})]
    )
    writer.close()
    with open(path, "ab") as f:
        f.write(b'{"seq":4,"t":1,"kind":"met')  # killed mid-write
    assert [r["seq"] for r in read_all(path)] == [1, 2, 3]  # readers ignore the torn line
    again = JournalWriter(path)  # e.g. the agent recording how a lost job ended
    record = again.append("state", state="killed")
    again.close()
    assert record["seq"] == 4
    records = read_all(path)
    assert [r["seq"] for r in records] == [1, 2, 3, 4]
    assert records[2]["values"] == {"loss": "nan"}  # non-finite as strings, valid JSON


def test_reader_resumes_from_its_offset(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    writer = JournalWriter(path)
    reader = JournalReader(path)
    assert reader.read_new() == []
    writer.append("heartbeat")
    assert [r["seq"] for r in reader.read_new()] == [1]
    writer.append("heartbeat")
    writer.append("heartbeat")
    assert [r["seq"] for r in reader.read_new()] == [2, 3]
    assert reader.read_new() == [] and reader.last_seq == 3


def test_seq_of_reads_the_prefix_and_falls_back_to_json() -> None:
    assert seq_of(b'{"seq":42,"t":1,"kind":"x"}') == 42
    assert seq_of(b'{"t":1,"seq":7}') == 7
    assert seq_of(b"garbage") is None


def _job_dir(tmp_path: Path, records: int) -> Path:
    job = tmp_path / "jobs" / "20261129-120000-abcdef" / "0"
    job.mkdir(parents=True)
    spec = {"id": "20261129-120000-abcdef", "name": "big", "node": "0", "argv": ["x"], "workdir": "/"}
    (job / "spec.json").write_text(json.dumps(spec))
    writer = JournalWriter(job / "events.jsonl")
    writer.append("state", state="starting", supervisor_pid=1)
    writer.append("state", state="running", pid=2)
    for start in range(0, records, 1000):
        writer.append_many(
            [
                ("metric", {"values": {"step": i, "loss": 1 / (i + 1)}})
                for i in range(start, min(start + 1000, records))
            ]
        )
    writer.append("state", state="exited", exit_code=0, signal=None)
    writer.close()
    return job


def test_the_fold_is_cached_and_the_cache_matches_a_full_fold(tmp_path: Path) -> None:
    job = _job_dir(tmp_path, 20_000)
    first = JobView("20261129-120000-abcdef", "0", job).refresh()
    assert (job / CACHE_NAME).exists() and (job / CACHE_NAME).stat().st_mode & 0o777 == 0o600
    second_view = JobView("20261129-120000-abcdef", "0", job)
    second_view.spec = None
    second = second_view.refresh()
    assert second == first and second["state"] == "exited" and second["last"]["step"] == 19_999
    assert second_view.reader.offset == (job / "events.jsonl").stat().st_size


def test_a_bad_cache_is_ignored(tmp_path: Path) -> None:
    job = _job_dir(tmp_path, 10)
    (job / CACHE_NAME).write_text(dumps({"offset": 10**9, "fields": {"state": "exited"}}))
    obj = JobView("20261129-120000-abcdef", "0", job).refresh()
    assert obj["last_seq"] == 13 and obj["last"]["step"] == 9


def test_only_a_json_object_is_a_record() -> None:
    assert loads_object('{"seq": 1}') == {"seq": 1}
    for line in ("[1, 2]", "3", '"seq"', "null", "true", "{torn", ""):
        assert loads_object(line) is None, line
