"""The full log's rows on screen (issue 36, finding 10): one row per line cut at the edge and shifted
by a horizontal offset, or wrapped onto as many rows as it takes. Pure: lines in, rows out."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Row(NamedTuple):
    line: int  # the log line this row shows
    text: str  # the part of the line on this row
    first: bool  # the line's first row (it carries the number)


def _chunks(text: str, width: int) -> list[str]:
    width = max(1, width)
    return [text[i : i + width] for i in range(0, len(text), width)] or [""]


def rows(
    top: int,
    total: int,
    height: int,
    width: int,
    text_of: Callable[[int], str | None],
    *,
    wrap: bool,
    x: int = 0,
    from_end: bool = False,
) -> list[Row]:
    """The rows of a view `height` rows high and `width` columns wide (the text's, past the number).
    Cut: line `top` and on, each from column `x`. Wrapped: from `top` on, or (`from_end`, following)
    the last lines that fill the view, so the newest line is on screen whole."""
    if not wrap:
        return [
            Row(line, (text_of(line) or "")[x : x + width], True)
            for line in range(top, min(total, top + height))
        ]
    if from_end:
        out: list[Row] = []
        line = total - 1
        while line >= 0 and len(out) < height:
            parts = _chunks(text_of(line) or "", width)
            out[:0] = [Row(line, p, i == 0) for i, p in enumerate(parts)]
            line -= 1
        return out[-height:] if len(out) > height else out
    out = []
    line = top
    while line < total and len(out) < height:
        out += [Row(line, p, i == 0) for i, p in enumerate(_chunks(text_of(line) or "", width))]
        line += 1
    return out[:height]
