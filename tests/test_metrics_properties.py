"""Properties over generated input: nothing raises; a JSON object line keeps its numbers."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remote_agent.metrics import parse as metrics
from remote_agent.metrics import parse_line

# Keys that are already canonical and collide with no synonym, prefix or component rule.
_KEYS = st.from_regex(r"m[a-z]{1,8}", fullmatch=True)
_VALUES = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _journal_value(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.text(max_size=400))
def test_any_text_never_raises(line: str) -> None:
    # parse_line swallows errors as a last resort; the reader under it must not need that.
    result = metrics._parse(line)
    assert result is None or (isinstance(result, dict) and result)
    assert parse_line(line) == result


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(
    ["loss", "=", ":", " ", "1", "0.5", "e-5", "nan", "inf", "|", "[", "]", "{", "}", "'", '"', "%", "/",
     "it/s", "s/it", "100%|", "█", "Epoch", "Test:", "val_", "\x1b[0m", "\b", ",", "(", ")", "-", "step"]
), max_size=60))  # fmt: skip
def test_metric_shaped_noise_never_raises(parts: list) -> None:
    result = metrics._parse("".join(parts))
    assert result is None or isinstance(result, dict)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=12))
def test_json_object_line_round_trips_its_numbers(obj: dict) -> None:
    expected = {k: _journal_value(v) for k, v in obj.items()}
    result = parse_line(json.dumps(obj))
    assert result == expected
    for key, value in expected.items():
        assert type(result[key]) is type(value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_KEYS, st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=8))
def test_json_values_printed_as_strings_round_trip_too(obj: dict) -> None:
    line = json.dumps({k: repr(v) for k, v in obj.items()})
    assert parse_line(line) == obj


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32), st.integers(min_value=0, max_value=10**9))
def test_key_value_line_reads_back_the_loss_and_step(loss: float, step: int) -> None:
    assert parse_line(f"step={step} loss={loss!r}") == {"step": step, "loss": loss}
