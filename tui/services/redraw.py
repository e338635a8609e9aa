"""The redraw throttle: the fleet changed → one `FleetChanged` at most every MIN_REDRAW seconds,
carrying every tag that accumulated meanwhile, so the screens redraw at most ~10 times a second
whatever the event rate."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual.app import App

from ..messages import FleetChanged

MIN_REDRAW = 0.1


def later(delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
    """A one-shot delay on the app's loop (called on the app thread). A Textual Timer costs a
    task and its messages per use; these fire 10-20 times a second under a fleet."""
    return asyncio.get_running_loop().call_later(delay, callback)


class Redraw:
    def __init__(self, app: App[Any], changed: Callable[[set[str]], None] = lambda tags: None) -> None:
        self.app = app
        self.changed = changed  # told every tag set as it comes (before the throttle)
        self._tags: set[str] = set()
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def publish(self, tags: set[str]) -> None:
        """Say the fleet changed, at most every MIN_REDRAW seconds (tags accumulate meanwhile)."""
        self.changed(tags)
        self._tags |= tags
        if not self._tags or self._timer is not None:
            return
        wait = self._last + MIN_REDRAW - time.monotonic()
        if wait > 0:
            self._timer = later(wait, self._flush)
        else:
            self._flush()

    def _flush(self) -> None:
        self._timer = None
        tags, self._tags = frozenset(self._tags), set()
        self._last = time.monotonic()
        if tags:
            self.app.post_message(FleetChanged(tags))
