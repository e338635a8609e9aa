"""A burst of metric records is written densely (`points` lines) and reads back as the records it
was given, exactly as the one-record-per-line format (bounded_line per record) reads back."""

from __future__ import annotations

import json
import random
from pathlib import Path

from remote_agent.storage.journal import JournalWriter, bounded_line, read_all


def _points(rnd: random.Random, n: int) -> list:
    names = ["loss", "step", "lr", "val_loss", "grad_norm", "epoch", "acc1", "tokens_per_sec"]
    values = [0, -3, 10**12, 0.5, -1e-8, 1.2345678901234567, 3e300, "nan", "inf", "-inf", float("nan"), "é,]"]
    shapes = [[rnd.choice(names) for _ in range(rnd.randint(1, 6))] for _ in range(4)]  # repeats make runs
    return [{name: rnd.choice(values) for name in rnd.choice(shapes)} for _ in range(n)]


def _as_old_lines_read(records: list) -> list:
    """What today's reader got from the one-line-per-record format for these records."""
    return [json.loads(bounded_line(r)) for r in records]


def test_a_burst_reads_back_as_one_record_per_line_would(tmp_path: Path) -> None:
    rnd = random.Random(7)
    points = _points(rnd, 3000)
    writer = JournalWriter(tmp_path / "events.jsonl")
    records = writer.append_many([("metric", {"values": p}) for p in points])
    lines = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert any('"kind":"points"' in line for line in lines)  # runs were found and written densely
    assert len(lines) < len(points)
    assert read_all(tmp_path / "events.jsonl") == _as_old_lines_read(records)
    assert [r["seq"] for r in read_all(tmp_path / "events.jsonl")] == list(range(1, 3001))
    assert (
        JournalWriter(tmp_path / "events.jsonl").last_seq == 3000
    )  # a reopened writer continues after the run


def test_a_burst_mixed_with_other_records_keeps_their_order(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path / "events.jsonl")
    entries = [
        ("metric", {"values": {"loss": 1.0}}),
        ("metric", {"values": {"loss": 0.75}}),
        ("event", {"event": "checkpoint_saved", "data": {"path": "a},{b"}}),
        ("metric", {"values": {"loss": 0.5}}),
        ("metric", {"values": {"note": "x},{y"}}),
        ("metric", {"values": {"loss": 0.25}, "extra": 1}),  # not a plain point: its own line
        ("metric", {"values": {"loss": 0.125}}),
    ]
    records = writer.append_many(entries)
    lines = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["kind"] for line in lines] == [
        "points",
        "event",
        "metric",
        "metric",
        "metric",
        "metric",
    ]
    assert read_all(tmp_path / "events.jsonl") == _as_old_lines_read(records)


def test_a_long_run_is_split_into_bounded_lines(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path / "events.jsonl")
    wide = [{f"k{i:03d}": 1.0 + j for i in range(200)} for j in range(300)]  # ~1.6 KB a row
    records = writer.append_many([("metric", {"values": v}) for v in wide])
    lines = (tmp_path / "events.jsonl").read_bytes().splitlines()
    assert len(lines) > 1 and all(len(line) <= 64 << 10 for line in lines)
    assert read_all(tmp_path / "events.jsonl") == _as_old_lines_read(records)


def test_a_huge_point_in_a_burst_is_bounded(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path / "events.jsonl")
    huge = {f"k{i:05d}": 1.0 for i in range(20000)}
    records = writer.append_many([("metric", {"values": {"loss": 1.0}}), ("metric", {"values": huge}),
                                  ("metric", {"values": dict(huge)})])  # fmt: skip
    written = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert written == [bounded_line(r) for r in records]  # a run of one too big point each: cut as any record
    assert all(len(line.encode()) <= 64 << 10 for line in written)
