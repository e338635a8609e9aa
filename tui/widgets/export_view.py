"""The export key (E, Binding id `export_view`) for any view: its rows go to export_rows.write on
the app's Background service (file IO off the app's thread); a toast says where they went, or why not."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.content import Content
from textual.widget import Widget
from textual.widgets import DataTable

from ..export_rows import Cell, write
from ..services.background import background
from .failures import report, say

EXPORT_BINDING = Binding("E", "export_view", "Export", id="export_view", show=False,
                         tooltip="write this view's rows to CSV and JSON files")  # fmt: skip


def plain(cell: Any) -> Cell:
    if cell is None or isinstance(cell, (int, float)):
        return cell
    text = cell.plain if isinstance(cell, (Text, Content)) else str(cell)
    return None if text in ("—", "-", "") else text  # the table's "nothing here" is a null, not a dash


def table_rows(table: DataTable[Any], key: str | None = None) -> tuple[list[str], list[list[Cell]]]:
    """What a DataTable shows, in its order, as plain text; `key`: the row keys first, as this column
    (the jobs table's rows are keyed by job id, which it does not show)."""
    columns = [str(plain(c.label) or c.key.value) for c in table.ordered_columns]
    rows = [[plain(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    if key is not None:
        columns = [key, *columns]
        rows = [[r.key.value, *row] for r, row in zip(table.ordered_rows, rows, strict=True)]
    return columns, rows


def export(node: Widget, view: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> None:
    """The rows to files in the app's Background service (a thread); a toast says where."""
    settings = getattr(node.app, "settings", None)
    where = getattr(getattr(settings, "ui", None), "export_dir", None)
    directory = Path(where).expanduser() if where else Path.cwd()

    def done(path: Path) -> None:
        say(node, f"{len(rows)} rows to {path} and {path.with_suffix('.json').name}", "exported")

    def failed(exc: BaseException) -> None:
        report(node, "export", f"{directory}: {getattr(exc, 'strerror', None) or exc}")

    background(node).run(
        node, partial(write, view, columns, rows, directory), group="export", done=done, failed=failed
    )
