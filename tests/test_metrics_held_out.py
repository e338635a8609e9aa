"""Parser, round two: the held-out classes of issue 13, on real lines from each framework.

tests/data/metrics/held_out_round2.jsonl holds one real line per record, the lines printed just
before it (a table header), the exact point expected and the URL the line was taken from.
Classes: a ``total`` column after the loss parts (the total is the loss, never parts + total),
prefixed or qualified loss keys (``closs``, ``Loss Train`` / ``Loss Val``), GAN component losses
(kept as their own series, never summed into ``loss``) and tables read by their header's names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remote_agent.metrics import LineParser, parse_line

CASES_FILE = Path(__file__).parent / "data" / "metrics" / "held_out_round2.jsonl"
CASES = [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _point(case: dict):
    parser = LineParser()
    for before in case["context"]:
        parser.parse(before)
    return parser.parse(case["line"])


@pytest.mark.parametrize("case", CASES, ids=[f"{c['class']}-{i}" for i, c in enumerate(CASES)])
def test_held_out_line(case: dict) -> None:
    assert case["source"], "every example names where it was printed"
    assert _point(case) == case["expected"]


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if not c["context"] and c["class"] != "header_table"],
    ids=lambda c: c["line"][:40],
)
def test_lines_that_need_no_header_read_the_same_without_a_line_parser(case: dict) -> None:
    assert parse_line(case["line"]) == case["expected"]


def test_every_class_is_covered_by_real_examples() -> None:
    counts = {}
    for case in CASES:
        counts[case["class"]] = counts.get(case["class"], 0) + 1
    assert {k: v >= 3 for k, v in counts.items()} == {
        "total_column": True, "header_table": True, "qualified_key": True, "gan": True,
    }  # fmt: skip


@pytest.mark.parametrize("case", [c for c in CASES if c["class"] == "gan"], ids=lambda c: c["line"][:40])
def test_gan_losses_are_never_summed(case: dict) -> None:
    point = _point(case)
    assert point is not None
    if "loss" in point:  # only a loss the line prints under that very name ("loss: 0.0698...")
        assert f"loss: {point['loss']}" in case["line"]


def test_a_total_column_is_the_loss_not_added_to_its_parts() -> None:
    for case in (c for c in CASES if c["class"] == "total_column"):
        point = _point(case)
        parts = point["box_loss"] + point["obj_loss"] + point["cls_loss"]
        assert point["loss"] == pytest.approx(parts, rel=0.01), case["line"]


def test_header_names_beat_the_column_count_guess() -> None:
    # YOLOv5 7.0 prints box/obj/cls; without its header three columns read as YOLOv8's box/cls/dfl.
    case = next(
        c for c in CASES if c["class"] == "header_table" and c["context"] and "obj_loss" in c["context"][0]
    )
    assert "dfl_loss" in parse_line(case["line"])
    point = _point(case)
    assert "dfl_loss" not in point and point["obj_loss"] == 0.08384


def test_a_header_does_not_read_rows_of_another_width() -> None:
    parser = LineParser()
    assert parser.parse("epoch train_loss valid_loss time") is None
    assert parser.parse("0 0.5 0.6 00:01") == {"epoch": 0, "loss": 0.5, "val_loss": 0.6}
    assert parser.parse("3 4 5") is None  # three fields under four columns: not a row of it
    assert parser.parse("Downloading 3/10 files") is None
    assert parser.parse("all 0.5 0.6 00:01") is None  # a row starts with its index


def test_prose_is_no_header() -> None:
    parser = LineParser()
    for line in ("Starting training loss computation now", "epoch done", "Epoch finished, saving model"):
        assert parser.parse(line) is None
    assert parser.parse("1 0.5 0.25 0.125 0.0625") is None


def test_a_new_header_replaces_the_old_one() -> None:
    parser = LineParser()
    parser.parse("epoch train_loss valid_loss time")
    parser.parse("      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size")
    assert parser.parse("0 0.5 0.6 00:01") is None
    assert parser.parse("        1/10      2.0G    1.0    0.5    0.25        9        640")["loss"] == 1.75


def test_the_line_parser_never_raises() -> None:
    parser = LineParser()
    parser.parse("epoch train_loss valid_loss time")
    for junk in ("\x00\xff 1 2 3 4", "1 " * 5000, "0 nan inf -inf", "0 1e999 2 00:00", None, b"1 2 3 4"):
        parser.parse(junk)  # type: ignore[arg-type]
    assert parser.parse("0 nan inf 00:00") == {"epoch": 0, "loss": "nan", "val_loss": "inf"}


def test_a_validation_header_with_an_iou_range_is_no_metric() -> None:
    # YOLOv5/v7 title their last column "mAP@.5:.95": the ".95" is an IoU threshold, not a value.
    # https://github.com/WongKinYiu/yolov7/issues/849
    line = (
        "               Class      Images      Labels           P           R      mAP@.5  mAP@.5:.95: 100%|"
        "██████████| 50/50 [01:15<00:00,  1.52s/it]"
    )
    assert parse_line(line) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Format strings from public training scripts (GitHub code search), filled with numbers.
        ("Loss train: 0.345\t test: 0.456\t", {"loss": 0.345, "test_loss": 0.456}),
        ("Accuracy train: 91.2%\t test: 89.1%", {"acc": 91.2, "test_acc": 89.1}),
        ("20240101  12:00:00: LOSS train: 0.5, valid: 0.6", {"loss": 0.5, "val_loss": 0.6}),
        ("Epoch   50 | loss train: 0.1234 | loss test: 0.2345 | accuracy test: 85.0%",
         {"epoch": 50, "loss": 0.1234, "test_loss": 0.2345, "test_acc": 85.0}),
        ("step 5 | train 0.3 val 0.4", None),  # a split word after no measurement names nothing
    ],
)  # fmt: skip
def test_a_bare_split_word_after_a_measurement_is_that_measurement_for_the_split(line: str, expected) -> None:
    assert parse_line(line) == expected


def test_thousands_groups_are_one_number() -> None:
    # BasicSR prints the iteration as "{:,d}": https://github.com/Maclory/SPSR/issues/38
    assert parse_line("<epoch: 13, iter:   1,200, lr:1.000e-04> l_g_pix: 3.1989e-03")["step"] == 1200
    assert parse_line("Trainable params: 1,234,567") is None
    assert parse_line("lr=[1.9e-05, 1.9e-05] loss=1") == {"lr": 1.9e-05, "loss": 1}
    parser = LineParser()  # the template fast path reads a grouped number whole too
    for step in (1200, 1300, 25400, 1234567):
        assert parser.parse(f"<epoch: 13, iter: {step:,d}, lr:1.000e-04> l_g_pix: 3.1989e-03")["step"] == step
