"""`?`: every key, where it works and what it does, read from the Bindings themselves."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label


def _rows(where: str, bindings: list[BindingType]) -> list[tuple[Content, Content, Content]]:
    rows = []
    for b in bindings:
        if isinstance(b, Binding) and b.description:
            keys = ", ".join(k.strip() for k in b.key.split(","))
            keys = (
                keys.replace("question_mark", "?")
                .replace("plus", "+")
                .replace("minus", "-")
                .replace("slash", "/")
            )
            rows.append(
                (
                    Content(keys),
                    Content(b.description + (f" — {b.tooltip}" if b.tooltip else "")),
                    Content(where),
                )
            )  # remapped keys such as "[" are not markup
    return rows


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help_close")]

    def __init__(self, sections: list[tuple[str, list[BindingType]]]) -> None:
        super().__init__(classes="modal")
        self.sections = sections

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Keys (also in the command palette: ctrl+p)", classes="dialog-title")
            yield DataTable(cursor_type="none", classes="help-table", id="keys")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("key", "does", "where")
        for where, bindings in self.sections:
            table.add_rows(_rows(where, bindings))

    def action_close(self) -> None:
        self.dismiss(None)
