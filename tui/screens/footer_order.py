"""The Footer's order: the keys that work everywhere (quit, help, theme) come first, so a narrow
terminal (80 columns) cuts a screen's less common keys, never these."""

from __future__ import annotations

from textual.binding import ActiveBinding
from textual.screen import Screen

FOOTER_FIRST = ("quit", "help", "next_theme")


class AppKeysFirst(Screen):
    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = super().active_bindings
        first = {k: b for k, b in bindings.items() if b.binding.id in FOOTER_FIRST}
        first = dict(sorted(first.items(), key=lambda kb: FOOTER_FIRST.index(kb[1].binding.id or "")))
        return {**first, **{k: b for k, b in bindings.items() if k not in first}}
