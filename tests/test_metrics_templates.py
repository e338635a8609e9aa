"""The per-stream template fast path gives exactly the full parser's points, for any numbers."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from test_metrics_frameworks import TABLES
from test_metrics_traps import NOT_METRICS

from remote_agent.metrics import LineParser, parse_line, templates
from remote_agent.metrics.templates import TemplateCache

DATA = Path(__file__).parent / "data"


def _corpus() -> list:
    lines = [line for table in TABLES.values() for line, _ in table] + list(NOT_METRICS)
    for log in sorted((DATA / "logs").glob("*.log")):
        lines += re.split(r"\r\n|\r|\n", log.read_text(encoding="utf-8"))
    held_out = (DATA / "metrics" / "held_out_round2.jsonl").read_text(encoding="utf-8").splitlines()
    lines += [json.loads(record)["line"] for record in held_out if record.strip()]
    # Table headers change what the rows under them mean: that is the tables' test, not this one.
    return [line for line in lines if not re.match(r"\s*epoch\s+(?:gpu_mem|train_loss)", line, re.I)]


def without_templates() -> LineParser:
    """A LineParser that reads every line with the full parser (its context kept: bars, ranks...)."""
    reference = LineParser()
    reference._templates.parse = lambda line, fast=True: parse_line(line)  # type: ignore[method-assign]
    reference._templates.read_run = lambda lines, start, out: start  # type: ignore[method-assign]
    return reference


def test_repeated_templates_with_new_numbers_read_as_the_full_parser_reads_them() -> None:
    rnd = random.Random(13)
    parser = LineParser()
    reference = without_templates()
    lines = _corpus()
    checked = 0
    for round_ in range(12):
        for line in lines:
            varied = re.sub(r"\d", lambda _: str(rnd.randint(0, 9)), line) if round_ else line
            assert parser.parse(varied) == reference.parse(varied), varied
            checked += 1
    assert checked > 2000


def test_derived_values_are_computed_for_each_line() -> None:
    parser = LineParser()
    assert parser.parse("box_loss=1.5 cls_loss=0.25 step=4")["loss"] == 1.75
    assert parser.parse("box_loss=2.5 cls_loss=0.5 step=5")["loss"] == 3.0
    assert (
        parser.parse("steps:  10%| | 100/1000 [02:00<18:00,  1.25s/it, avr_loss=0.0812]")["it_per_sec"] == 0.8
    )
    assert (
        parser.parse("steps:  20%| | 200/1000 [04:00<16:00,  2.50s/it, avr_loss=0.0712]")["it_per_sec"] == 0.4
    )


def test_numbers_that_look_alike_are_not_confused() -> None:
    parser = LineParser()
    assert parser.parse("step 5 loss 5") == {"step": 5, "loss": 5}
    assert parser.parse("step 6 loss 7") == {"step": 6, "loss": 7}
    assert parser.parse("step 7 loss 7") == {"step": 7, "loss": 7}
    assert parser.parse("step 8 loss 2") == {"step": 8, "loss": 2}


def test_a_recipe_that_stops_matching_the_full_parser_is_dropped() -> None:
    # A reading that depends on the value itself: the periodic check catches it and the template
    # takes the full parser from then on.
    def full(line: str):
        n = int(line.split("=")[1])
        return {"small": n} if n < 100 else {"big": n}

    cache = TemplateCache(full)
    for n in range(templates.CHECK_EVERY * 2):
        cache.parse(f"x={n}")
    assert cache.parse("x=500") in ({"big": 500}, {"small": 500})
    for n in range(templates.CHECK_EVERY + 1):
        cache.parse(f"x={1000 + n}")
    assert cache.parse("x=2000") == {"big": 2000}


def test_the_cache_stays_bounded() -> None:
    cache = TemplateCache(parse_line)
    for n in range(templates.MAX_TEMPLATES + 50):
        name = "".join(chr(97 + int(d)) for d in str(n))
        cache.parse(f"file_{name} 1.5")
    assert len(cache._recipes) <= templates.MAX_TEMPLATES


def test_a_zero_speed_is_no_speed_after_its_template_learnt_real_ones() -> None:
    # tqdm prints 0.00it/s while a step stalls: the parser reads no speed there, and the recipe
    # learnt from the moving bar (it_per_sec = that number) must not read one either.
    bar = "Epoch 1:  {p}%|#  | {n}/1000 [00:10<03:10, {speed}, loss=0.{p}]"
    lines = [
        bar.format(p=p, n=10 * p, speed=s)
        for p, s in enumerate(("3.50it/s", "2.50it/s", "1.50it/s", "0.00it/s", "4.50it/s", "0.00it/s"), 1)
    ]
    parser, reference = LineParser(), without_templates()
    assert [parser.parse(line) for line in lines] == [reference.parse(line) for line in lines]
    assert "it_per_sec" not in parse_line(lines[3])
