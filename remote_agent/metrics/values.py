"""Turning printed numbers into journal values, and cleaning raw terminal lines.

Values keep the type they were printed as (``100`` -> int, ``0.5``/``1e-5`` -> float) so a step
stays an integer. Non-finite values become the strings the journal uses ("nan", "inf", "-inf"):
a diverging run must show on the chart, not vanish from it.
"""

from __future__ import annotations

import math
import re
from typing import Optional, Union

Number = Union[int, float, str]

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) and lone escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")

# Framework wrappers around a scalar in dict reprs: tensor(2.31, device='cuda:0'),
# np.float64(0.5), numpy.float32(1.0).
_WRAPPED = re.compile(r"\b(?:tensor|np\.\w+|numpy\.\w+)\(\s*([-+]?[\w.+-]+)\s*(?:,[^()]*)?\)")

_NON_FINITE = {
    "nan": "nan",
    "+nan": "nan",
    "-nan": "nan",
    "inf": "inf",
    "+inf": "inf",
    "infinity": "inf",
    "+infinity": "inf",
    "-inf": "-inf",
    "-infinity": "-inf",
}
_INT = re.compile(r"[-+]?\d+\Z")
_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\Z")


def clean(line: str) -> str:
    """Drop what a terminal would have hidden: ANSI escapes and text erased by backspaces."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\b" in line:
        # Keras' old progress bar rewinds with backspaces: what follows the last one is current.
        line = line[line.rfind("\b") + 1 :]
    return line


def unwrap_scalars(text: str) -> str:
    """``tensor(2.31, device='cuda:0')`` -> ``2.31`` so the number reads like any other."""
    if "(" not in text:
        return text
    return _WRAPPED.sub(r"\1", text)


def to_number(text: str) -> Optional[Number]:
    """A printed number as int, float or a non-finite string; None when it is no number."""
    text = text.strip()
    if not text or len(text) > 64:
        return None
    special = _NON_FINITE.get(text.lower())
    if special is not None:
        return special
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return finite_or_name(float(text))
    return None


def finite_or_name(value: float) -> Number:
    """A float as itself when finite, else as the journal's string for it."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def from_json(value: object) -> Optional[Number]:
    """A decoded JSON value as a metric value; strings that hold numbers count too."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return finite_or_name(value)
    if isinstance(value, str):
        return to_number(value)
    if isinstance(value, list) and value and not isinstance(value[0], (list, dict)):
        # A learning rate per parameter group: the first group is the one people read.
        return from_json(value[0])
    return None
