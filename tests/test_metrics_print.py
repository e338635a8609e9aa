"""`gpudeck metrics --json` prints a batch of points at once, each exactly as json.dumps writes it."""

from __future__ import annotations

import json

from tui.commands.metrics import _json_lines, _print


def _records(values: list) -> list:
    return [
        {"seq": i + 1, "t": 1700000000.5 + i, "kind": "metric", "values": v} for i, v in enumerate(values)
    ]


def test_batch_lines_equal_one_dumps_per_point() -> None:
    values = [{"step": i, "loss": 1.0 / (i + 1), "lr": "nan"} for i in range(300)] + [{}]
    records = _records(values)
    expected = [json.dumps({"t": r["t"], "node": "0", "values": r["values"]}) for r in records]
    assert _json_lines(records, "0") == expected


def test_a_value_that_looks_like_a_cut_falls_back_to_one_by_one() -> None:
    records = _records([{"loss": 1.0}, {"note": 'x, {"t": 1'}, {"loss": 0.5}])
    expected = [json.dumps({"t": r["t"], "node": "n", "values": r["values"]}) for r in records]
    assert _json_lines(records, "n") == expected


def test_print_writes_only_metric_points(capsys) -> None:
    records = _records([{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.25}])
    records.insert(1, {"seq": 9, "t": 1.0, "kind": "state", "state": "running"})
    _print(records, "0", as_json=True)
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["values"]["step"] for line in lines] == [1, 2]
    _print(records, "0", as_json=False)
    human = capsys.readouterr().out.splitlines()
    assert len(human) == 2 and human[0].endswith("step=1  loss=0.5")
