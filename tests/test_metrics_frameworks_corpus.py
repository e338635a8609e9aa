"""Output of real frameworks run under `gpudeck run --pty` (issue 32): the bytes output.log got,
through the supervisor's line splitter and the job's parser, give the framework's own points.

tests/data/metrics/streams_frameworks.jsonl: each record names its source (the bench case that
printed it: bench/frameworks/) and what the framework itself recorded at those steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remote_agent.metrics import LineParser
from remote_agent.supervision.lines import LineSplitter

CASES_FILE = Path(__file__).parent / "data" / "metrics" / "streams_frameworks.jsonl"
CASES = [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _read(output: bytes, chunk: int) -> list[dict]:
    splitter, parser, points = LineSplitter(), LineParser(), []
    for i in range(0, len(output), chunk):
        points += [p for p in parser.parse_many(splitter.feed(output[i : i + chunk])) if p is not None]
    points += [p for p in parser.parse_many(splitter.flush()) if p is not None]
    return points + parser.flush()


@pytest.mark.parametrize("chunk", [7, 65536])
@pytest.mark.parametrize("case", CASES, ids=[c["class"] for c in CASES])
def test_terminal_output_reads_as_the_framework_recorded(case: dict, chunk: int) -> None:
    assert case["source"], "every example names where it was printed"
    assert _read(case["output"].encode("utf-8"), chunk) == case["expected"]


def test_a_rich_frame_is_read_once_and_a_new_epochs_0_frame_gives_the_last_batch_its_step() -> None:
    (rich,) = [c for c in CASES if c["class"] == "rich_bar"]
    points = _read(rich["output"].encode("utf-8"), 65536)
    # epoch 1's 0/20 frames (drawn twice) show epoch 0's last loss: step 20, read once
    assert [(p["epoch"], p["loss"], p.get("step")) for p in points] == [
        (0, 0.79, None),
        (0, 0.097, None),
        (0, 0.7, 20),
        (1, 0.141, None),
        (1, 0.073, None),
        (1, 0.049, None),
    ]
    # mid-epoch frames carry no step: Rich's thread may draw a counter one batch ahead of its loss
    assert "it_per_sec" not in points[2]  # the reset bar's 0.00it/s is no reading


def test_a_message_glued_after_the_last_rich_frame_adds_no_value() -> None:
    (end,) = [c for c in CASES if c["class"] == "rich_bar_end"]
    assert "`max_epochs=3` reached" in end["output"]
    points = _read(end["output"].encode("utf-8"), 65536)
    assert all("max_epochs" not in p for p in points)
    assert [(p["epoch"], p["loss"]) for p in points] == [
        (2, 0.001),
        (2, 0.0),
        (2, 0.001),
    ]


def test_a_rich_frame_whose_counter_ran_ahead_of_its_loss_gets_no_step() -> None:
    (race,) = [c for c in CASES if c["class"] == "rich_bar_race"]
    points = _read(race["output"].encode("utf-8"), 65536)
    # 19/20 shows step 58's loss (1.416; step 59's is 0.2384): at step 59 it would be false
    assert (2, 1.416) in [(p["epoch"], p["loss"]) for p in points]
    assert all("step" not in p for p in points)


def test_a_new_epochs_0_frame_puts_the_last_batchs_loss_at_its_step() -> None:
    (epoch,) = [c for c in CASES if c["class"] == "rich_bar_epoch"]
    points = _read(epoch["output"].encode("utf-8"), 65536)
    stepped = [p for p in points if "step" in p]
    assert stepped == [{"epoch": 1, "loss": 0.638, "step": 40}]  # CSVLogger: 0.6383
    # a stream read from its middle: the 0/20 frames with no earlier epoch before them prove nothing
    tail = epoch["output"][epoch["output"].index("Epoch 2/2") - 5 :]
    assert all("step" not in p for p in _read(tail.encode("utf-8"), 65536))
