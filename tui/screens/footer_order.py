"""The Footer's order: the keys that work everywhere (quit, help, theme) come first, so a narrow
terminal (80 columns) cuts a screen's less common keys, never these; and there the Footer is compact."""

from __future__ import annotations

from textual import events
from textual.binding import ActiveBinding
from textual.screen import Screen
from textual.widgets import Footer

FOOTER_FIRST = ("quit", "help", "next_theme")
NARROW = 120  # below this many columns the Footer is compact and leaves out the palette's hint


class AppKeysFirst(Screen[None]):
    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = super().active_bindings
        first = {k: b for k, b in bindings.items() if b.binding.id in FOOTER_FIRST}
        first = dict(sorted(first.items(), key=lambda kb: FOOTER_FIRST.index(kb[1].binding.id or "")))
        return {**first, **{k: b for k, b in bindings.items() if k not in first}}

    def on_resize(self, event: events.Resize) -> None:  # subclasses' own on_resize runs as well
        self.fit_footer(event.size.width)

    def on_mount(self) -> None:
        self.fit_footer(self.app.size.width)

    def fit_footer(self, width: int) -> None:
        for footer in self.query(Footer):
            footer.compact = width < NARROW
            footer.show_command_palette = width >= NARROW
