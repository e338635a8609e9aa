"""The footer of gpudeck's screens: Textual's Footer without two costs that a fleet makes large.

- It recomposed (every key widget unmounted and mounted again, then a relayout) on every binding
  refresh, and the deck refreshes bindings on each tab switch, row move and job state change, mostly
  with the same keys shown. This one recomposes only when what it shows changed.
- Each recompose leaked its keys: every FooterKey is bound to the footer's `compact` (data_bind),
  and Textual prunes that watcher list only when `compact` changes (never, here), so removed keys
  stayed alive: +70 MiB over 200 tab switches. Closed watchers are dropped after each recompose.
- Even composing only on change, each tab switch (the tabs' keys differ) mounted a new set of keys,
  styled and laid them out: ~12 ms of a 64-host deck's switch. The keys composed are slots: other
  keys are written into them in place, the spare ones hidden; a recompose happens only when a screen
  shows more keys than ever before (or grouped keys, which Textual's compose lays out itself).
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

WATCHERS = "__watchers"  # where textual.reactive._watch keeps an object's watcher lists
Key = tuple[
    str, str, str, object, bool, str, str
]  # key, action, description, group, enabled, tooltip, key display


class DeckFooter(Footer):
    _shown: tuple[Key, ...] | None = None  # the keys on show

    def _keys(self) -> tuple[Key, ...]:
        return tuple(
            (b.key, b.action, b.description, b.group, enabled, tooltip, self.app.get_key_display(b))
            for _, b, enabled, tooltip in self.screen.active_bindings.values()
            if b.show
        )

    def compose(self) -> ComposeResult:
        self._shown = self._keys() if self._bindings_ready else None
        yield from super().compose()

    def _watch_show_command_palette(self) -> None:
        self._shown = None  # the palette's key comes and goes only by a compose: the next change composes

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if self._shown is not None and self.is_attached and screen is self.screen:
            keys = self._keys()
            if keys == self._shown or self._relabel(keys):
                return  # the same keys, or new ones written into the keys on show
        super().bindings_changed(screen)

    def _relabel(self, keys: tuple[Key, ...]) -> bool:
        """Show `keys` in the FooterKeys already mounted; False when they do not fit (a recompose)."""
        shown: dict[str, Key] = {}
        for k in keys:  # Textual's compose shows the first binding of each action
            shown.setdefault(k[1], k)
        if any(k[3] is not None for k in shown.values()):
            return False
        slots = [w for w in self.children if isinstance(w, FooterKey) and not w.has_class("-command-palette")]
        if len(shown) > len(slots) or len(slots) + 1 < len(self.children):
            return False  # more keys than slots, or a group (its label, its box) composed last time
        for slot, (key, action, description, _, enabled, tooltip, display) in zip(
            slots, shown.values(), strict=False
        ):
            if (slot.key, slot.action, slot.description, slot.key_display, slot._disabled, slot.display) != (
                key,
                action,
                description,
                display,
                not enabled,
                True,
            ):
                slot.key, slot.action, slot.description, slot.key_display = key, action, description, display
                if slot._disabled == enabled:  # a class change restyles the key: only when it changed
                    slot._disabled = not enabled
                    slot.set_class(not enabled, "-disabled")
                slot.display = True
                slot.refresh(layout=True)  # its width follows its words
            slot.tooltip = tooltip or None
        for slot in slots[len(shown) :]:
            slot.display = False
        self._shown = keys
        return True

    async def recompose(self) -> None:
        if self._shown is not None and self.is_attached and self._keys() == self._shown:
            return  # several refreshes in one tick queue several recomposes: the first did it (or _relabel)
        await super().recompose()
        for watchers in getattr(self, WATCHERS, {}).values():
            watchers[:] = [
                (node, callback)
                for node, callback in watchers
                if not (node._closing or node._closed or not getattr(node, "is_attached", True))
            ]
