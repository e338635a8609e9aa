"""A DataTable that draws again only the cells that changed (issue #17).

Textual's DataTable keys its render caches on one counter that every `update_cell` bumps, so a
single live cell (a running job's runtime, its loss) made every visible cell go through Rich again
on the next frame; and it empties every cache on each style update, which a focus change or a tab
switch causes, although the table looks the same as the last time it had that focus. Here:

- `update_cell` leaves the counter alone and marks its cell stale; before the next render the stale
  cells, and the assembled lines of their rows, leave the caches (one pass per frame, however many
  cells changed): a running job's row draws again its loss and step, not its name or host.
  Anything that moves rows or columns (add, remove, clear, sort, a new width) still bumps the
  counter as before.
- A resize with the same width (the table shown again, a terminal only taller) keeps the drawn
  rows: DataTable forgot them on every Resize, i.e. at each switch to the jobs tab.
- A style update keeps one set of caches per look (the component styles that the cells are drawn
  with): focus → blur → focus finds the focused look's rows still drawn. The look is read when the
  table renders, because the component styles are updated after the widget's own.

Built on DataTable's private caches (textual 8.2, pinned): tests/test_tui_steady_table.py checks
that what is drawn matches the data, so a Textual upgrade that changes them fails there, not on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.style import Style
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import CellType, ColumnKey, RowKey

LOOKS = 4  # cache sets kept: focused and blurred in the user's theme, with room for a theme switch
CACHES = ("_row_render_cache", "_cell_render_cache", "_row_renderable_cache", "_line_cache")


class SteadyTable(DataTable[CellType]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stale: set[tuple[RowKey, ColumnKey]] = set()  # cells updated since the last render
        # the other looks' caches, with the counter they were drawn at (after a structural change
        # their entries can never be hit again, so they are dropped rather than kept)
        self._looks: dict[tuple[Style, ...], tuple[int, tuple[LRUCache[Any, Any], ...]]] = {}
        self._look: tuple[Style, ...] | None = None
        self._look_stale = True
        self._drawn_width = -1

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: CellType,
        *,
        update_width: bool = False,
    ) -> None:
        count = self._update_count
        super().update_cell(row_key, column_key, value, update_width=update_width)
        if not update_width:  # a width change moves other rows' cells: keep DataTable's full redraw
            self._update_count = count
            self._stale.add(
                (
                    row_key if isinstance(row_key, RowKey) else RowKey(row_key),
                    column_key if isinstance(column_key, ColumnKey) else ColumnKey(column_key),
                )
            )

    def _on_resize(self, event: events.Resize) -> None:
        event.prevent_default()  # Textual would call DataTable's own handler after this one
        if event.size.width != self._drawn_width:  # cells are drawn at their column's width, not the table's
            self._drawn_width = event.size.width
            super()._on_resize(event)

    def redraw_all(self) -> None:
        """Draw every row and the header again (after changing what they show outside update_cell,
        e.g. a column's label)."""
        self._update_count += 1
        self._require_update_dimensions = True
        self.refresh()

    def notify_style_update(self) -> None:
        # DataTable's own empties every cache; the look is compared when the table next renders
        super(DataTable, self).notify_style_update()
        self._look_stale = True
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._look_stale:
            self._use_look()
        if self._stale:
            self._forget_cells()
        return super().render_lines(crop)

    def _use_look(self) -> None:
        """Switch the render caches to those of the current look (new, empty ones for a new look)."""
        self._look_stale = False
        look = (
            self.rich_style,
            *(self.get_component_rich_style(name) for name in sorted(self.COMPONENT_CLASSES)),
        )
        if look == self._look:
            return
        if self._look is not None:
            self._looks[self._look] = (self._update_count, tuple(getattr(self, name) for name in CACHES))
        count, caches = self._looks.pop(look, (None, ()))
        if count != self._update_count:
            caches = tuple(LRUCache(getattr(self, name).maxsize) for name in CACHES)
        for name, cache in zip(CACHES, caches, strict=True):
            setattr(self, name, cache)
        while len(self._looks) >= LOOKS:
            self._looks.pop(next(iter(self._looks)))
        self._look = look
        self._styles_cache.clear()
        self._get_styles_to_render_cell.cache_clear()

    def _forget_cells(self) -> None:
        """Drop the cached drawings of the cells that changed and of their rows, in every look kept."""
        cells, self._stale = self._stale, set()
        rows = {row for row, _ in cells}
        indexes = {self._row_locations.get(key) for key in rows if key in self._row_locations}
        sets = [
            tuple(getattr(self, name) for name in CACHES),
            *(caches for _, caches in self._looks.values()),
        ]
        for row_cache, cell_cache, renderable_cache, line_cache in sets:
            checks: tuple[tuple[Any, Callable[[Any], bool]], ...] = (
                (row_cache, lambda k: k[0] in rows),
                (cell_cache, lambda k: (k[0], k[1]) in cells),
                (renderable_cache, lambda k: k[1] in indexes),
            )
            for cache, hit in checks:
                keys = cache.keys()  # an LRUCache is not iterable itself
                for key in [k for k in keys if hit(k)]:
                    cache.discard(key)
            line_cache.clear()  # keyed by screen line: cheap to rebuild from the rows kept
