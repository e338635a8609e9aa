"""Parser, round four (issue 32): output as frameworks print it, read with the lines before it.

tests/data/metrics/streams_round4.jsonl holds whole stretches of real output (recorded here from a
real torchrun/tqdm run, or quoted from the framework's docs, source or issue tracker: each record
names its source) and every point the job's parser must read from them, in order. Classes: ranks
of a distributed job (per-rank series, never mixed into ``loss``), tqdm/Lightning bars as they
redraw (one reading per counter position, the counter as the step), steps that restart each
epoch and Keras' epoch headers, stable-baselines3's table, XGBoost/LightGBM rounds, the
round-1/3 corpus items, and its last three: chainer/ESPnet ``PrintReport`` rows with blank cells,
pandas frames printed with their row labels, ``Batch 50/469`` counters with no epoch on the line.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from remote_agent.metrics import LineParser

CASES_FILE = Path(__file__).parent / "data" / "metrics" / "streams_round4.jsonl"
CASES = [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _read(lines: list[str]) -> list[dict]:
    parser = LineParser()
    return [p for p in (parser.parse(line) for line in lines) if p is not None] + parser.flush()


@pytest.mark.parametrize("case", CASES, ids=[f"{c['class']}-{i}" for i, c in enumerate(CASES)])
def test_recorded_output_reads_as_expected(case: dict) -> None:
    assert case["source"], "every example names where it was printed"
    assert _read(case["lines"]) == case["expected"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['class']}-{i}" for i, c in enumerate(CASES)])
def test_chunks_read_the_same_points(case: dict) -> None:
    # The supervisor hands the parser a read's worth of lines at once (parse_many, with its
    # template fast path): the context must hold across chunks of any size.
    rnd = random.Random(len(case["lines"]))
    parser, points, i = LineParser(), [], 0
    lines = case["lines"] * 3  # again and again: templates get learnt and used
    while i < len(lines):
        size = rnd.choice((1, 2, 5, 64))
        points += [p for p in parser.parse_many(lines[i : i + size]) if p is not None]
        i += size
    points += parser.flush()
    assert points == _read(lines)
    assert points[: len(case["expected"])] == case["expected"]


def test_every_class_is_covered_by_real_examples() -> None:
    counts: dict = {}
    for case in CASES:
        counts[case["class"]] = counts.get(case["class"], 0) + 1
    assert {k: v >= 2 for k, v in counts.items()} == {
        "rank": True, "bar": True, "epoch_step": True, "keras_epoch": True, "rl_table": True,
        "boosting": True, "corpus": True, "print_report": True, "pandas": True, "batch_counter": True,
    }  # fmt: skip


def test_other_ranks_never_write_the_loss_series() -> None:
    for case in (c for c in CASES if c["class"] == "rank"):
        for point in _read(case["lines"]):
            if "loss" in point and point.get("rank", 0) != 0:
                pytest.fail(f"rank {point['rank']}'s value read as the loss: {point}")


def test_a_bar_with_no_progress_reads_nothing() -> None:
    parser = LineParser()
    assert parser.parse("Epoch 3:   0%|          | 0/20 [00:00<?, ?it/s, v_num=0, train_loss=0.650]") is None
    point = parser.parse("Epoch 3:   5%|▌         | 1/20 [00:00<00:01, 15.02it/s, v_num=0, train_loss=0.600]")
    assert point is not None and point["step"] == 3 * 20 + 1 and point["loss"] == 0.6


def test_a_bar_that_starts_over_counts_on() -> None:
    # One bar per epoch with no epoch in its description: the second pass continues the steps.
    parser = LineParser()
    frames = [f"{n * 25}%|##  | {n}/4 [00:01<00:01, 2.00it/s, loss={v}]" for n, v in ((1, 0.9), (4, 0.6))]
    frames += [f"{n * 25}%|##  | {n}/4 [00:01<00:01, 2.00it/s, loss={v}]" for n, v in ((0, 0.6), (2, 0.4))]
    assert [p["step"] for p in map(parser.parse, frames) if p] == [1, 4, 6]


def test_a_table_without_its_closing_rule_reads_nothing() -> None:
    sb3 = next(c for c in CASES if c["class"] == "rl_table")["lines"]
    assert _read(sb3[:-1] + ["Training done"]) == []
    assert _read(sb3[:5] + ["|    loss | 0.245 | extra |"] + sb3[5:]) == []  # not its layout


def test_a_message_after_a_bar_takes_the_step_of_the_bar_drawn_after_it() -> None:
    # tqdm.write (HF Trainer's log dicts): the frame before the message may be older than the
    # step (frames within mininterval are skipped); the one drawn after it is the current step.
    parser = LineParser()
    assert parser.parse(" 33%|###3      | 2/6 [00:00<00:00,  8.24it/s]") is None
    assert parser.parse("{'loss': 0.5, 'epoch': 0.67}") is None  # waits for the next frame
    assert parser.parse(" 50%|#####     | 3/6 [00:00<00:00,  8.26it/s]") == {
        "loss": 0.5,
        "epoch": 0.67,
        "step": 3,
    }
    # a next line that is no bar releases it as it was; at the end of the output, flush() does
    assert parser.parse("{'loss': 0.4, 'epoch': 1.0}") is None
    assert parser.parse("Saving model checkpoint to out/checkpoint-3") == {"loss": 0.4, "epoch": 1.0}
    parser.parse(" 67%|######6   | 4/6 [00:00<00:00,  8.28it/s]")
    assert parser.parse("{'loss': 0.3, 'epoch': 1.33}") is None
    assert parser.flush() == [{"loss": 0.3, "epoch": 1.33}] and parser.flush() == []


def test_an_epoch_banner_from_0_counts_steps_from_0() -> None:
    lines = ["Epoch 0/2", "100/100 - loss: 0.5", "Epoch 1/2", "100/100 - loss: 0.4"]
    assert [(p["epoch"], p["step"]) for p in _read(lines)] == [(0, 100), (1, 200)]


def test_a_blank_print_report_cell_is_no_value_and_its_neighbours_keep_their_columns() -> None:
    (espnet,) = [c for c in CASES if c["class"] == "print_report" and "espnet" in c["source"]]
    points = _read(espnet["lines"])
    # 0.731425 stands under main/acc, 136184 under elapsed_time (not under the blank val columns)
    assert points[0]["acc"] == 0.731425 and points[0]["elapsed_time"] == 136184
    assert [("val_loss" in p) for p in points] == [False, False, False, True, False, False]


def test_a_pandas_frame_without_an_index_column_reads_nothing() -> None:
    (keras,) = [c for c in CASES if c["class"] == "pandas" and "keras" in c["source"]]
    points = _read(keras["lines"])
    # the second frame's row labels (0, 1, 2) are positions, not epochs: its rows read nothing
    assert [p["epoch"] for p in points] == [1, 2, 3, 4, 5]
