"""`metrics --json` from journal text: byte for byte what decoding and json.dumps of each point
printed before (the old path, `_print` on decoded records, is the oracle), for odd values too."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remote_agent.storage.journal import JournalWriter, read_all
from tests.conftest import gpudeck
from tui.commands.metrics import _print
from tui.commands.metrics_text import points_block_json, points_json
from tui.remote.client import lines_after

ODD_VALUES: list[dict] = [
    {"step": 1, "loss": 1.0, "lr": 1e-05},
    {"step": 2, "loss": float("nan"), "grad": float("inf"), "neg": float("-inf")},
    {"step": 3, "loss": -0.0, "big": 2**70, "ok": True, "no": False, "none": None},
    {"step": 4, "note": "x,"},
    {"step": 4, "tag": ":y"},
    {":key": 1},
    {"step": 4, "key,": 1},
    {"step": 4, "key:colon": 1, "comma,key": 2},
    {"tags": [":a"]},
    {"tags": ["b,"]},
    {"step": 4, "list": ["a", "b"], "tail": "c"},
    {"step": 5, "loss": 0.5, "名前": "損失", "emoji": "🔥"},
    {"step": 5, "separators": "a\u2028b\x85c\x1cd"},  # line ends to str.splitlines, not to JSON
    {"step": 6, "nested": {"a": 1, "b": [1, 2, {"c": "d"}]}, "list": ["a", "b"], "nums": [1, 2]},
    {"step": 7, "quote": 'say "hi"', "back": "a\\b", "ctl": "tab\there"},
    {"step": 8, "braces": "}{", "brackets": "][", "empty": "", "": 3},
    {},
    {"step": 9, "loss": 0.25},
]


def _journal(path: Path, values: list[dict], plain_run: int = 50) -> None:
    journal = JournalWriter(path)
    journal.append("state", state="starting", supervisor_pid=1)
    journal.append("state", state="running", pid=2)
    journal.append_many(
        [("metric", {"values": {"step": i, "loss": round(1 / i, 6)}}) for i in range(1, plain_run)]
    )
    for v in values:
        journal.append("metric", values=v)
        journal.append("heartbeat")
    journal.append("gpu", gpus=[{"index": 0, "util": 50}])
    journal.append("event", event="resized", data={"from": 1, "to": 2, "reason": "util > 90 %"})
    journal.append_many([("metric", {"values": v}) for v in values])
    journal.append("metric", values={"loss": 0.1}, truncated=True)  # an extra field: not plain
    journal.append_many(
        [("metric", {"values": {"step": i, "loss": round(1 / i, 6)}}) for i in range(100, 160)]
    )
    journal.append("state", state="exited", exit_code=0, signal=None)
    journal.close()


def _old_output(journal: Path, node: str, capsys) -> str:
    capsys.readouterr()
    _print(read_all(journal), node, as_json=True)
    return capsys.readouterr().out


@pytest.mark.slow  # ~1 s: the CLI and its agent start
def test_cli_output_is_byte_identical_to_decode_and_dumps(gpudeck_home: Path, tmp_path: Path, capsys) -> None:
    directory = gpudeck_home / "local-agent" / "jobs" / "20260101-000000-0dd0dd" / "0"
    directory.mkdir(parents=True)
    spec = {"id": "20260101-000000-0dd0dd", "name": "odd", "node": "0", "argv": ["true"], "workdir": str(tmp_path),
            "env": {}, "setup": [], "grace": 60.0, "created_at": time.time(), "stop_signal": "SIGTERM"}  # fmt: skip
    (directory / "spec.json").write_text(json.dumps(spec))
    (directory / "lock").touch()
    _journal(directory / "events.jsonl", ODD_VALUES)
    done = gpudeck("metrics", "--json", "odd", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = _old_output(directory / "events.jsonl", "0", capsys)
    assert done.stdout == expected
    assert (
        len(done.stdout.split("\n")) - 1 == 49 + 2 * len(ODD_VALUES) + 1 + 1 + 60
    )  # every point, the resize
    human = gpudeck("metrics", "odd", cwd=tmp_path)
    assert human.returncode == 0, human.stderr
    capsys.readouterr()
    _print(read_all(directory / "events.jsonl"), "0", as_json=False)
    assert human.stdout == capsys.readouterr().out


def test_plain_blocks_reshape_and_unsafe_ones_decline(tmp_path: Path, capsys) -> None:
    path = tmp_path / "events.jsonl"
    journal = JournalWriter(path)
    for v in ODD_VALUES:  # one plain line each (a burst would join same-named ones in a `points` line)
        journal.append("metric", values=v)
    journal.close()
    lines = [line + "\n" for line in path.read_text(encoding="utf-8").split("\n")[:-1]]
    for line, record in zip(lines, read_all(path), strict=True):
        got = points_json(line, "n1")
        expected = json.dumps({"t": record["t"], "node": "n1", "values": record["values"]}) + "\n"
        assert got in (None, expected), line
    # What must be reshaped, is; a separator or unicode inside a string, or a nested object, is decoded.
    reshaped = [i for i, line in enumerate(lines) if points_json(line, "n1") is not None]
    assert reshaped == [0, 1, 2, 10, 16, 17]
    assert points_json("".join(lines[:3]), "n1") is not None and points_json("".join(lines[:4]), "n1") is None


_TEXT = st.text(alphabet=st.sampled_from(list('ab ,:"{}[]\\é\t-')), max_size=6)
_LEAF = st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), _TEXT)
_VALUE = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(_TEXT, inner, max_size=3)), max_leaves=6)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(_TEXT, _VALUE, max_size=4), min_size=1, max_size=5))
def test_reshaped_text_always_equals_dumps_or_declines(tmp_path_factory, points: list[dict]) -> None:
    path = tmp_path_factory.mktemp("j") / "events.jsonl"
    journal = JournalWriter(path)
    for v in points:
        journal.append("metric", values=v)
    journal.close()
    got = points_json(path.read_text(encoding="utf-8"), "0")
    expected = "".join(
        json.dumps({"t": r["t"], "node": "0", "values": r["values"]}) + "\n" for r in read_all(path)
    )
    assert got in (None, expected)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    st.lists(_TEXT, min_size=1, max_size=4, unique=True),
    st.lists(st.lists(_LEAF, min_size=4, max_size=4), min_size=2, max_size=5),
)
def test_a_points_line_reshapes_to_dumps_or_declines(
    tmp_path_factory, names: list[str], rows: list[list]
) -> None:
    path = tmp_path_factory.mktemp("j") / "events.jsonl"
    journal = JournalWriter(path)
    journal.append_many([("metric", {"values": dict(zip(names, row))}) for row in rows])  # noqa: B905 (rows are longer)
    journal.close()
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") == 1 and '"kind":"points"' in text
    got = points_block_json(text[:-1], "0")
    expected = "".join(
        json.dumps({"t": r["t"], "node": "0", "values": r["values"]}) + "\n" for r in read_all(path)
    )
    assert got in (None, expected)
    plain = all(not isinstance(v, str) and not (isinstance(v, float) and not math.isfinite(v))
                for row in rows for v in row[: len(names)])  # fmt: skip
    assert (got is not None) == plain  # rows of numbers, booleans and nulls are always reshaped


def test_a_points_line_with_odd_names_reshapes_exactly(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    journal = JournalWriter(path)
    names = ["名前", 'q"uote', "a,b", "c:d", "]],[[", "", "\u2028"]
    journal.append_many(
        [("metric", {"values": {n: i * k for k, n in enumerate(names)}}) for i in (1, -2.5, 10**20)]
    )
    journal.close()
    line = path.read_text(encoding="utf-8")[:-1]
    expected = "".join(
        json.dumps({"t": r["t"], "node": "n,1", "values": r["values"]}) + "\n" for r in read_all(path)
    )
    assert points_block_json(line, "n,1") == expected
    assert points_block_json(line.replace('"kind":"points"', '"kind":"pointz"'), "0") is None


def test_a_resent_batch_keeps_only_the_lines_after_the_seq_seen() -> None:
    data = b'{"seq":4,"t":1,"kind":"heartbeat"}\n{"seq":5,"t":1,"kind":"heartbeat"}\n{"seq":6,"t":1,"kind":"heartbeat"}\n'
    assert lines_after(data, 4) == data.split(b"\n", 1)[1]
    assert lines_after(data, 6) == b""
