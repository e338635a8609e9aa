"""The series fold reads dense `points` lines as columns straight from their text (#13): the answer is
the one the same records written one per line give, and a line not in the writer's plain form reads
as `records.expand` reads it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remote_agent.serving import seriesfold
from remote_agent.serving.seriesfold import series
from remote_agent.storage.journal import JournalWriter
from remote_agent.storage.jsonio import dumps
from remote_agent.storage.pointcolumns import point_columns
from remote_agent.storage.records import expand
from tests.support.long_job import write_ended_job

Entry = tuple[str, dict[str, Any]]
_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6),
    st.none(),
    st.booleans(),
    st.sampled_from(["a],[b", "x", '"q"']),  # strings the columnar reader must leave to the ordinary one
)
_STEPS = st.one_of(st.none(), st.integers(0, 10**5), st.floats(0, 1e5), st.just(float("nan")))


@st.composite
def _entries(draw: Any) -> list[Entry]:
    """Runs of points with the same names (the writer makes those dense lines), stepless points,
    odd values, and GPU samples and events between them."""
    out: list[Entry] = []
    for _ in range(draw(st.integers(1, 8))):
        pick = draw(st.integers(0, 9))
        if pick == 0:
            out.append(("gpu", {"gpus": [{"index": 0, "uuid": "GPU-1", "util": draw(st.integers(0, 100))}]}))
        elif pick == 1:
            out.append(("event", {"event": "resized", "data": {"to": draw(st.integers(1, 8))}}))
        else:
            names = draw(
                st.lists(st.sampled_from(["loss", "acc", "lr", "val loss", "é"]), min_size=1, max_size=4)
            )
            for _ in range(draw(st.integers(1, 30))):
                values = {name: draw(_VALUES) for name in names}
                step = draw(_STEPS)
                out.append(("metric", {"values": values if step is None else {"step": step, **values}}))
    return out


def _one_per_line(dense: Path, plain: Path) -> None:
    """The dense journal's records, each `points` line written out as its metric records."""
    plain.mkdir()
    with open(dense / "events.jsonl", "rb") as f, open(plain / "events.jsonl", "w") as out:
        for line in f:
            for record in expand(json.loads(line)):
                out.write(dumps(record) + "\n")


@settings(max_examples=40, deadline=None)
@given(_entries(), st.integers(1, 5))
def test_a_dense_journal_folds_like_the_same_records_one_per_line(entries: list[Entry], writes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dense, plain = Path(tmp) / "dense", Path(tmp) / "plain"
        dense.mkdir()
        journal = JournalWriter(dense / "events.jsonl")
        for i in range(writes):  # a few batches, so runs and clock readings split the way a job's do
            part = entries[i * len(entries) // writes : (i + 1) * len(entries) // writes]
            if part:
                journal.append_many(part)
        journal.close()
        _one_per_line(dense, plain)
        assert series(dense, 4000) == series(plain, 4000)


def test_a_long_dense_journal_folds_without_a_dict_per_point(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_expand(record: dict[str, Any]) -> list[dict[str, Any]]:
        raise AssertionError("a dense line in the writer's form went through expand()")

    d = write_ended_job(agent_dir, "20261201-000000-de75e0", "long", 30_000, spike_at=20_001)
    monkeypatch.setattr(seriesfold, "expand", no_expand)
    answer, skipped = series(d, 200)
    loss = answer["metrics"]["loss"]
    assert skipped == 0 and answer["last_seq"] == 30_003 and loss["axis"] == "step"
    assert [20_001, 50.0] in loss["points"] and loss["points"][0] == [1, 1.0]


_WRITER_FORM = (
    '{"seq":7,"last":9,"t":1.5,"kind":"points","names":["step","loss","loss"],'
    '"rows":[[1,"nan",2.5],[2,null,"-inf"],[3,true,1e-3]]}'
)
_OTHER_FORMS = [
    _WRITER_FORM.replace('"rows":[[1,', '"rows": [[1,'),  # spaces: json reads it, the columns do not
    _WRITER_FORM.replace("[2,null,", "[2,"),  # rows of uneven length: expand refuses the line
    _WRITER_FORM.replace('"nan"', '"a],[b"'),  # a string that would fool the split
    _WRITER_FORM.replace("true", "[1,2]"),  # a nested value
    _WRITER_FORM.replace('"last":9', '"last":10'),  # more seqs than rows
    _WRITER_FORM.replace('"names":["step","loss","loss"]', '"names":["st]ep","loss","x"]'),
    _WRITER_FORM.replace('"t":1.5', '"t":1e999'),  # a time that is no number
    '{"seq":7,"last":6,"t":1.5,"kind":"points","names":["a"],"rows":[]}',
]


def test_the_writers_form_reads_as_columns_and_the_rest_is_left_to_expand() -> None:
    dense = point_columns(_WRITER_FORM.encode())
    assert dense is not None and dense.t == 1.5 and dense.rows == 3
    by_expand = [r["values"] for r in expand(json.loads(_WRITER_FORM))]
    assert dense.columns == {name: [v[name] for v in by_expand] for name in by_expand[0]}
    assert dense.columns["loss"] == [2.5, "-inf", 1e-3]  # a repeated name: the last column, as dict(zip())
    for line in _OTHER_FORMS:
        assert point_columns(line.encode()) is None, line


def test_lines_the_columns_leave_fold_as_expand_reads_them(tmp_path: Path) -> None:
    lines = [_WRITER_FORM] + _OTHER_FORMS
    (tmp_path / "events.jsonl").write_text("".join(line + "\n" for line in lines))
    answer, skipped = series(tmp_path, 100)
    # As json + expand read them: the spaced, "a],[b" and nested-value lines fold like the first; uneven
    # rows, a wrong seq range, a time of 1e999 and no rows are refused; the stepless line ("st]ep") lands
    # its loss at the latest step (none of its values a number) and starts "x" as a time series.
    unreadable = [line for line in _OTHER_FORMS if not _readable(line)]
    assert skipped == len(unreadable) == 4
    assert answer["metrics"]["loss"]["points"] == [[1, 2.5], [3, 1e-3]] * 4
    assert answer["metrics"]["x"]["axis"] == "time" and [p[1] for p in answer["metrics"]["x"]["points"]] == [
        2.5,
        1e-3,
    ]
    assert answer["last_seq"] == 6  # the last line's: seq 7, last 6


def _readable(line: str) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    t = record.get("t")
    return bool(expand(record)) and isinstance(t, float) and t == t and abs(t) != float("inf")


def test_a_bool_or_nan_amid_numbers_is_not_drawn(tmp_path: Path) -> None:
    # min() and max() see only the ends: a bool or a nan in the middle of a column slipped past them.
    (tmp_path / "events.jsonl").write_text(
        '{"seq":1,"last":4,"t":1.0,"kind":"points","names":["step","loss"],"rows":[[1,0.5],[2,false],[NaN,0.25],[4,NaN]]}\n'
    )
    answer, _ = series(tmp_path, 100)
    assert answer["metrics"]["loss"]["points"] == [[1, 0.5], [2, 0.25]]  # the nan step: at the latest step


def test_an_integer_too_big_for_a_float_is_not_drawn_and_breaks_nothing(tmp_path: Path) -> None:
    big = "9" * 400  # valid JSON; float() of it raises OverflowError
    (tmp_path / "events.jsonl").write_text(
        '{"seq":1,"last":3,"t":1.0,"kind":"points","names":["step","loss"],"rows":[[1,0.5],[2,BIG],[3,0.25]]}\n'
        '{"seq":4,"t":2.0,"kind":"metric","values":{"step":4,"loss":BIG}}\n'.replace("BIG", big)
    )
    answer, skipped = series(tmp_path, 100)
    assert skipped == 0 and answer["metrics"]["loss"]["points"] == [[1, 0.5], [3, 0.25]]
