"""A burst of metric records is encoded in one call and written byte for byte as one by one."""

from __future__ import annotations

import json
import random
from pathlib import Path

from remote_agent.storage.journal import JournalWriter, bounded_line
from remote_agent.storage.metriclines import encode_points


def _points(rnd: random.Random, n: int) -> list:
    names = ["loss", "step", "lr", "val_loss", "grad_norm", "epoch", "acc1", "tokens_per_sec"]
    values = [0, -3, 10**12, 0.5, -1e-8, 1.2345678901234567, 3e300, "nan", "inf", "-inf"]
    return [{rnd.choice(names): rnd.choice(values) for _ in range(rnd.randint(0, 6))} for _ in range(n)]


def test_burst_lines_equal_one_by_one_lines(tmp_path: Path) -> None:
    rnd = random.Random(7)
    points = _points(rnd, 500)
    writer = JournalWriter(tmp_path / "events.jsonl")
    records = writer.append_many([("metric", {"values": p}) for p in points])
    written = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert written == [bounded_line(r) for r in records]
    assert [json.loads(line)["values"] for line in written] == points
    assert [json.loads(line)["seq"] for line in written] == list(range(1, 501))


def test_a_burst_mixed_with_other_records_keeps_their_order(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path / "events.jsonl")
    entries = [
        ("metric", {"values": {"loss": 1.0}}),
        ("event", {"event": "checkpoint_saved", "data": {"path": "a},{b"}}),
        ("metric", {"values": {"loss": 0.5}}),
        ("metric", {"values": {"note": "x},{y"}}),  # not a flat point: falls back, still right
        ("metric", {"values": {"loss": 0.25}, "extra": 1}),
    ]
    records = writer.append_many(entries)
    written = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert written == [bounded_line(r) for r in records]
    assert [json.loads(line)["kind"] for line in written] == ["metric", "event", "metric", "metric", "metric"]


def test_points_that_cannot_be_cut_safely_are_refused() -> None:
    assert encode_points([{"a": "},{"}, {"b": 1}]) is None
    assert encode_points([{"a": float("nan")}, {"b": 1}]) == ['{"a":"nan"}', '{"b":1}']  # as bounded_line
    assert encode_points([{}, {}]) == ["{}", "{}"]
    assert encode_points([{"a": [{"x": 1}, {"y": 2}]}, {"b": 1}]) is None


def test_a_huge_point_in_a_burst_is_bounded(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path / "events.jsonl")
    huge = {f"k{i:05d}": 1.0 for i in range(20000)}
    records = writer.append_many([("metric", {"values": {"loss": 1.0}}), ("metric", {"values": huge})])
    written = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert written == [bounded_line(r) for r in records]
    assert len(written[1].encode()) <= 64 << 10
