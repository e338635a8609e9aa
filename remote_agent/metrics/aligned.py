"""Table rows read by where their fields stand under the header's names.

Two printers leave cells out of a row, or add one, so a row's fields cannot be matched to the
header's names by their order:

- chainer / ESPnet's ``PrintReport`` pads every column to a fixed width, left-aligned, and leaves a
  cell blank when its value was not reported at that line (``validation/main/loss`` between two
  validations): a field stands at the start of its column's name;
- a pandas ``DataFrame`` printed with ``print(df)`` right-aligns every column under its name and
  adds the row label (``0``, ``1``...) before the first column, under the header's indent: a field
  ends where its column's name ends, and the label ends before the first name starts.

``place`` gives each field its column by those positions, or None when any field stands under no
name: a row is read only when every field's column is certain.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

Span = Tuple[int, int, str]  # start, end, text

_WORD = re.compile(r"\S+")
_LABEL = re.compile(r"\d+\Z")


def spans(text: str) -> List[Span]:
    return [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]


def place(header: Sequence[Span], row: str) -> Optional[List[Tuple[int, str]]]:
    """(column index, field) for each field of `row`, the row label left out; None unless every
    field stands exactly under one column, left to right."""
    fields = spans(row)
    if not fields or not header:
        return None
    if header[0][0] > 0:  # an indented header: pandas, whose rows start with their label
        start, end, label = fields[0]
        if start != 0 or end > header[0][0] or not _LABEL.match(label):
            return None
        fields = fields[1:]
    starts = {span[0]: i for i, span in enumerate(header)}
    ends = {span[1]: i for i, span in enumerate(header)}
    placed: List[Tuple[int, str]] = []
    for start, end, text in fields:
        column = starts.get(start)
        if column is None:
            column = ends.get(end)
        if column is None or (placed and column <= placed[-1][0]):
            return None
        placed.append((column, text))
    return placed
