"""Tables whose header line names the columns: the rows below are read by those names.

Detection trainers (Ultralytics YOLOv3/v5/v7: "Epoch gpu_mem box obj cls total targets img_size")
and fastai ("epoch train_loss valid_loss error_rate time") print a header once, then rows of bare
numbers. A row alone cannot say whether its fourth number is a class loss or a total; the header
can. ``Table`` remembers the last header seen and reads the rows that fit it.

A header is a line without digits whose first word is an index (epoch, iter, step...) and that
names at least one measurement; a row has as many fields as the header, starts with a number, and
every field is a number, an ``N/M`` count, a size such as ``3.21G`` or a clock time (skipped).
A row with blank cells (chainer's ``PrintReport``) or a pandas frame's row label is read by where
its fields stand under the names (``aligned``); a pandas header (indented over the labels) may
name its index anywhere, and its ``NaN`` cells are cells without a value.
"""

from __future__ import annotations

import re
from typing import Dict, List, Literal, Optional, Tuple, Union

from .aligned import Span, place, spans
from .canonical import PLAIN_INDEXES, is_signal, normalise
from .formats import find_bar
from .rules import finalise
from .values import Number, to_number

Values = Dict[str, Number]

_MAX_COLUMNS = 24
_FIELD = re.compile(r"(?P<num>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|nan|inf)(?P<rest>/\d+|[GMK]|%)?\Z")
_CLOCK = re.compile(r"\d+:\d\d(?::\d\d)?\Z")
_NAME = re.compile(r"[A-Za-z_][\w/.@-]*\Z")
# Ultralytics' headers name losses by their part alone ("box", "obj", "GIoU"); "total" is their sum.
_DETECTION_WORDS = {
    "giou": "box_loss", "box": "box_loss", "obj": "obj_loss", "cls": "cls_loss", "seg": "seg_loss",
    "dfl": "dfl_loss", "kobj": "kobj_loss", "pose": "pose_loss", "total": "loss",
    "gpu_mem": "gpu_mem_gb", "targets": "instances", "labels": "instances", "instances": "instances",
    "img_size": "", "size": "",
}  # fmt: skip


class Table:
    """The columns of the last header line; rows under it become points."""

    def __init__(self) -> None:
        self.columns: Optional[Tuple[str, ...]] = None
        self._spans: List[Span] = []  # where the header's names stand
        self._pandas = False  # indented over the rows' labels (YOLO's is too: its rows fit by order)

    def learn(self, text: str) -> bool:
        """Remember ``text`` (right-stripped, its indent kept) as the current header when it is
        one (no digits in it: the caller checks)."""
        words = text.split()
        if len(words) < 3 or len(words) > _MAX_COLUMNS:
            return False
        pandas = text[:1].isspace() and all(_NAME.match(w) for w in words)
        if normalise(words[0]) not in PLAIN_INDEXES and not (
            pandas and any(normalise(w) in PLAIN_INDEXES for w in words)
        ):
            return False
        detection = any(w.lower() == "gpu_mem" for w in words)
        names = tuple(_column_name(w, detection) for w in words)
        if not any(name and is_signal(name) for name in names):
            return False
        self.columns, self._spans, self._pandas = names, spans(text), pandas
        return True

    def row(self, text: str) -> Optional[Values]:
        """The point a row under the current header holds, or None when the line is no such row."""
        if self.columns is None:
            return None
        fields, rest = _split_row(text.strip())
        # A pandas row starts with its label at the line's start, under the header's indent (a
        # YOLO row is indented as its header is): only its fields' places say their columns.
        if len(fields) == len(self.columns) and not (self._pandas and text[:1].isdigit()):
            cells = list(enumerate(fields))
        else:
            found = place(self._spans, text)
            if found is None:
                return None
            cells, rest = found, ""
        values: Values = {}
        for column, field in cells:
            name = self.columns[column]
            value = None if self._pandas and field == "NaN" else _field_value(field)
            if value is False:
                return None
            if name and value is not None and name not in values:
                values[name] = value
        indexes = (
            [name for name in self.columns if name in PLAIN_INDEXES] if self._pandas else self.columns[:1]
        )
        if not any(isinstance(values.get(name), (int, float)) for name in indexes):
            return None  # a row has its index (pandas: in any column; else the first)
        if rest:
            bar = find_bar(rest)
            if bar is not None:  # "...  640: 100%|████| 16/16 [00:05<00:00,  2.78it/s]"
                for name, value in bar[1].items():
                    values.setdefault(name, value)
        return finalise(values)


def _column_name(word: str, detection: bool) -> str:
    if detection:
        special = _DETECTION_WORDS.get(word.lower())
        if special is not None:
            return special
    return normalise(word)


def _split_row(text: str) -> Tuple[List[str], str]:
    """Fields of a row, and what follows ": " (a progress bar on YOLO rows)."""
    cut = text.find(": ")
    if cut == -1:
        if text.endswith(":"):
            return text[:-1].split(), ""
        return text.split(), ""
    return text[:cut].split(), text[cut + 2 :]


def _field_value(
    field: str,
) -> Union[Number, Literal[False], None]:  # None: a skipped clock time; False: no row field
    m = _FIELD.match(field)
    if m is not None:
        rest = m.group("rest") or ""
        value = to_number(m.group("num"))
        if rest.startswith("/") and not isinstance(value, int):
            return False  # "3/10" counts things; only an index is printed as N/total
        return value if value is not None else False
    if _CLOCK.match(field):
        return None
    return False
