"""The Footer's order: the keys that work everywhere (quit, help, theme) come first, so a narrow
terminal (80 columns) cuts a screen's less common keys, never these; and there the Footer is compact."""

from __future__ import annotations

from functools import cache

from textual import events
from textual.binding import ActiveBinding, Binding
from textual.widgets import Footer

from .covered import QuietWhenCovered
from .footer_fit import FOOTER_FIRST, fit

NARROW = 160  # below this many columns the Footer is compact and leaves out the palette's hint
TYPING = "typing goes to the field: enter or esc first"


class AppKeysFirst(QuietWhenCovered):
    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = _declared_order(super().active_bindings)
        first = {k: b for k, b in bindings.items() if b.binding.id in FOOTER_FIRST}
        present = {b.binding.id for b in first.values()}
        for key, app_bindings in self.app._bindings.key_to_bindings.items():  # pinned: shown greyed
            for b in app_bindings:  # while a field takes the keys (a filter being typed)
                if b.id in FOOTER_FIRST and b.id not in present and key not in bindings:
                    remapped = self.app._keymap.get(b.id)  # config.toml's [keys], as the keys use it
                    if remapped:
                        key = remapped.split(",")[0]
                        b = b.with_key(key, key_display=None)
                    first[key] = ActiveBinding(self.app, b, False, TYPING)
                    present.add(b.id)
        first = dict(sorted(first.items(), key=lambda kb: FOOTER_FIRST.index(kb[1].binding.id or "")))
        ordered = {**first, **{k: b for k, b in bindings.items() if k not in first}}
        width = self.app.size.width
        return fit(ordered, width, width < NARROW, width >= NARROW, self.app.get_key_display)

    @property
    def palette_bindings(self) -> dict[str, ActiveBinding]:
        """The keys with their whole labels, none left out: the palette's commands."""
        return _declared_order(super().active_bindings)

    def on_resize(self, event: events.Resize) -> None:  # subclasses' own on_resize runs as well
        self.fit_footer(event.size.width)

    def on_mount(self) -> None:
        self.fit_footer(self.app.size.width)

    def fit_footer(self, width: int) -> None:
        for footer in self.query(Footer):
            footer.compact = width < NARROW
            footer.show_command_palette = width >= NARROW


def _declared_order(bindings: dict[str, ActiveBinding]) -> dict[str, ActiveBinding]:
    """Each node's keys in the order its BINDINGS declare them: Textual appends a binding that
    config.toml's [keys] remapped after all others, so it fell off the Footer's end."""
    nodes: dict[int, int] = {}
    for active in bindings.values():
        nodes.setdefault(id(active.node), len(nodes))

    def place(item: tuple[str, ActiveBinding]) -> tuple[int, int]:
        active = item[1]
        declared = _declared_ids(type(active.node))
        return nodes[id(active.node)], declared.get(active.binding.id or "", len(declared))

    return dict(sorted(bindings.items(), key=place))


@cache
def _declared_ids(cls: type) -> dict[str, int]:
    """Binding id → its place in the class's BINDINGS (its own first, then its bases')."""
    ids: dict[str, int] = {}
    for base in cls.__mro__:
        for b in vars(base).get("BINDINGS", ()):
            if isinstance(b, Binding) and b.id:
                ids.setdefault(b.id, len(ids))
    return ids
