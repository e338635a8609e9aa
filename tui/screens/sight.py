"""Whether a screen is in sight: a screen under an opaque one draws nothing until it is back."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen


def in_sight(screen: Screen[Any]) -> bool:
    """On top, or under a see-through screen (a modal dialog). Not Screen.is_current: that also
    counts the screen under any top screen, opaque or not."""
    top = screen.app.screen
    return top is screen or top.styles.background.a < 1
