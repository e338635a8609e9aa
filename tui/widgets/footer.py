"""The footer of gpudeck's screens: Textual's Footer without two costs that a fleet makes large.

- It recomposed (every key widget unmounted and mounted again, then a relayout) on every binding
  refresh, and the deck refreshes bindings on each tab switch, row move and job state change, mostly
  with the same keys shown. This one recomposes only when what it shows changed.
- Each recompose leaked its keys: every FooterKey is bound to the footer's `compact` (data_bind),
  and Textual prunes that watcher list only when `compact` changes (never, here), so removed keys
  stayed alive: +70 MiB over 200 tab switches. Closed watchers are dropped after each recompose.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

WATCHERS = "__watchers"  # where textual.reactive._watch keeps an object's watcher lists


class DeckFooter(Footer):
    _shown: tuple[object, ...] | None = None  # what the keys on show were composed from

    def _keys(self) -> tuple[object, ...]:
        return tuple((b.key, b.action, b.description, b.group, enabled, tooltip, self.app.get_key_display(b))
                     for _, b, enabled, tooltip in self.screen.active_bindings.values() if b.show)

    def compose(self) -> ComposeResult:
        self._shown = self._keys() if self._bindings_ready else None
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        if self._shown is not None and self.is_attached and screen is self.screen and self._keys() == self._shown:
            return  # the same keys: nothing to redraw
        super().bindings_changed(screen)

    async def recompose(self) -> None:
        if self._shown is not None and self.is_attached and self._keys() == self._shown:
            return  # several refreshes in one tick queue several recomposes: the first did it
        await super().recompose()
        for watchers in getattr(self, WATCHERS, {}).values():
            watchers[:] = [(node, callback) for node, callback in watchers
                           if not (node._closing or node._closed or not getattr(node, "is_attached", True))]
