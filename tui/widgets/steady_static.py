"""A Static that repaints without relayout when it can (issue 36: under a dense stream, each
throttled redraw relaid the job view's screen for every panel it updated, half of the view's
CPU). An unchanged picture is not drawn at all; one of the same height whose lines all fit the
width only repaints; a new height (or a line that wraps) is laid out again."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Static


class SteadyStatic(Static):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple[object, ...] | None = None  # text and spans drawn (Content's == skips colours)
        self._shape: tuple[int, bool, int] | None = None  # lines, all fit, width: what sets its height

    @property
    def drawn_width(self) -> int | None:
        """The width its lines were last drawn for (None: never drawn)."""
        return self._shape[2] if self._shape is not None else None

    def show_content(self, content: Content, width: int | None = None) -> None:
        """width: what the lines were made for, where that is not yet its laid-out width."""
        shown = (content.plain, tuple(content.spans))
        width = self.size.width if width is None else width
        if shown == self._shown and width == (self._shape or (0, False, -1))[2]:
            return
        lines = content.split("\n")
        fits = bool(width) and all(line.cell_length <= width for line in lines)
        shape = (len(lines), fits, width)
        self.update(content, layout=not fits or shape != self._shape)
        self._shown, self._shape = shown, shape
