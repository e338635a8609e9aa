"""A screen that paints nothing while an opaque screen covers it.

Textual counts the screen just below the top one as visible (it may show through a translucent
top), and for any change on it repaints the whole top screen — then marks itself for a repaint
again, so each message it handles later repaints the top whole once more (issue 36: the deck under
a job view cost a full job-view render a second). Covered by an opaque screen, it waits: Textual
lays it out and paints it whole when it is back on top. Under a dialog (translucent) it paints."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen


def covered(screen: Screen[Any]) -> bool:
    """True while another screen is on top and draws every cell of it (its background opaque)."""
    top = screen.app.screen
    return top is not screen and top.styles.background.a >= 1


class QuietWhenCovered(Screen[None]):
    def _on_timer_update(self) -> None:
        if not covered(self):
            super()._on_timer_update()
            return
        self._update_timer.pause()  # its dirt waits: the resume's layout repaints it all
        if self._callbacks:  # call_after_refresh callers still get their turn
            self.call_next(self._invoke_and_clear_callbacks)
