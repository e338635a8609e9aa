"""`?`: every key, where it works and what it does, read from the Bindings themselves.

One row per key: a key bound in several places with one meaning lists the places; a key that means
different things in different places (`p`: the fleet's GPU processes, a job's processes) says each
meaning with its places. A Rich table wraps its cells to the dialog's width, so it reads at 80×24 and
fits 220×60; the dialog scrolls when the rows do not fit.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.keys import key_to_character
from textual.screen import ModalScreen
from textual.widgets import Label, Static

Row = tuple[str, str, str]  # key, does, where

_NAMES = {"question_mark": "?", "plus": "+", "minus": "-", "slash": "/"}


def _name(key: str) -> str:
    """A key as the user types it: `!` for exclamation_mark, `<` for less_than_sign (Textual's own names)."""
    if key in _NAMES:
        return _NAMES[key]
    char = key_to_character(key)
    return char if char is not None and char.isprintable() else key


def _key(binding: Binding) -> str:
    return ", ".join(_name(k.strip()) for k in binding.key.split(","))


def rows(sections: list[tuple[str, list[BindingType]]]) -> list[Row]:
    """The help's rows, one per key, in the order keys first appear."""
    meanings: dict[str, dict[str, list[str]]] = {}  # key → what it does → where
    for where, bindings in sections:
        for b in bindings:
            if isinstance(b, Binding) and b.description:
                does = b.description + (f" — {b.tooltip}" if b.tooltip else "")
                places = meanings.setdefault(_key(b), {}).setdefault(does, [])
                if where not in places:
                    places.append(where)
    out = []
    for key, by_does in meanings.items():
        if len(by_does) == 1:
            [(does, places)] = by_does.items()
            out.append((key, does, ", ".join(places)))
        else:
            everywhere = list(dict.fromkeys(p for places in by_does.values() for p in places))
            does = "\n".join(f"{', '.join(places)}: {does}" for does, places in by_does.items())
            out.append((key, does, ", ".join(everywhere)))
    return out


def table(help_rows: list[Row]) -> Table:
    grid = Table(box=None, expand=True, show_edge=False, pad_edge=False, header_style="bold")
    grid.add_column("key", no_wrap=True)
    grid.add_column("does", ratio=3, overflow="fold")
    grid.add_column("where", ratio=1, overflow="fold")
    for key, does, where in help_rows:
        grid.add_row(Text(key, style="bold"), Text(does), Text(where))  # Text: "[" is no markup
    return grid


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help_close")]

    def __init__(self, sections: list[tuple[str, list[BindingType]]]) -> None:
        super().__init__(classes="modal")
        self.rows = rows(sections)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog help-dialog"):
            yield Label(Content("Keys (also in the command palette: ctrl+p)"), classes="dialog-title")
            with VerticalScroll(classes="help-keys"):
                yield Static(table(self.rows), id="keys")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()  # up/down/page keys scroll a long list

    def action_close(self) -> None:
        self.dismiss(None)
