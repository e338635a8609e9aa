"""A dense `points` line's columns straight from its text, without a dict (or a list) per point.

Folding a million points through `records.expand` made a dict per point and then took columns out
of them again: ~3.5 s of CPU for a 1 M-point journal, most of it that round trip (and the garbage
collector walking a million small containers). A line as the writer writes it (records.points_line:
compact, fields in order, rows of numbers, null, booleans or the writer's "nan"/"inf"/"-inf") is
instead decoded as ONE flat JSON list of its values, and each column is a slice of it.

Anything else (spaces, other strings, nested values, rows of uneven length, a count that does not
match seq..last) is not this module's to judge: `point_columns` says None and the caller decodes
the line the ordinary way (json + expand), so both readings agree on every line.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, NamedTuple, Optional, Pattern, Tuple

_LINE = re.compile(
    rb'\{"seq":(\d+),"last":(\d+),"t":(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?),"kind":"points",'
    rb'"names":(\[[^\]\n]*\]),"rows":\['
)  # then the rows, and `]}` (the rows' pattern below checks them)
# One value of a row: a bare JSON token (number, null, true, false; json.loads vouches for it) or a
# non-finite number as the writer spells it ("nan", checked apart: an alternation here costs a third
# of the fold). No other string: a `],[` inside one would fool the split.
_VALUE = rb"[^][,{}]+"
_NON_FINITE = (b'"nan"', b'"-inf"', b'"inf"')
_ROWS: Dict[int, Pattern[bytes]] = {}
_NAMES: Dict[bytes, Optional[List[str]]] = {}


class PointColumns(NamedTuple):
    t: float
    rows: int
    columns: Dict[
        str, List[Any]
    ]  # name -> its value in every row (a repeated name: the last, as dict(zip()))


def _rows_pattern(width: int) -> Pattern[bytes]:
    pattern = _ROWS.get(width)
    if pattern is None:
        row = rb"\[" + _VALUE + (rb"," + _VALUE) * (width - 1) + rb"\]"
        pattern = _ROWS[width] = re.compile(rb"(?:" + row + rb",)*" + row)
    return pattern


def _names(text: bytes) -> Optional[List[str]]:
    if text not in _NAMES:
        try:
            names = json.loads(text)
        except ValueError:
            names = None
        ok = isinstance(names, list) and names and all(isinstance(n, str) for n in names)
        if len(_NAMES) > 4096:  # a journal of ever-new names must not grow this without bound
            _NAMES.clear()
        _NAMES[text] = names if ok else None
    return _NAMES[text]


def _without(text: bytes, tokens: Tuple[bytes, ...]) -> bytes:
    for token in tokens:
        text = text.replace(token, b"")
    return text


def point_columns(line: bytes) -> Optional[PointColumns]:
    """The columns of one `points` line (without its newline), or None when it is not in the
    writer's plain form (the caller then decodes it the ordinary way)."""
    match = _LINE.match(line)
    if match is None or not line.endswith(b"]}"):
        return None
    seq, last, t_text, names_text = match.groups()
    rows_text = line[match.end() : -2]
    count = int(last) - int(seq) + 1
    names = _names(names_text)
    if names is None or count < 1 or rows_text.count(b"[") != count:
        return None
    width = len(names)
    if _rows_pattern(width).fullmatch(rows_text) is None:
        return None
    if b'"' in rows_text and b'"' in _without(rows_text, _NON_FINITE):
        return None  # a string other than the writer's non-finite numbers
    t = float(t_text)
    try:
        flat = json.loads(b"[" + rows_text[1:-1].replace(b"],[", b",") + b"]")
    except ValueError:
        return None
    if len(flat) != count * width or t != t or t in (float("inf"), float("-inf")):
        return None
    index = {name: i for i, name in enumerate(names)}  # a repeated name: the last column wins
    return PointColumns(t, count, {name: flat[i::width] for name, i in index.items()})
