"""The redraw throttle: the fleet changed → one `FleetChanged` at most every MIN_REDRAW seconds,
carrying every tag that accumulated meanwhile, so the screens redraw at most ~10 times a second
whatever the event rate. A change that is only telemetry (new points, latest values, heartbeats,
GPU samples, events, costs) waits TELEMETRY_REDRAW: a job printing 500 lines a second moves its
row and its chart once a second, as nvitop's (2 s) and k9s's (2 s) refresh, at a fraction of the
drawing (issue 36: drawing was most of the TUI's CPU under a dense stream). A structural change (a job
came, a state changed, a host) still shows within MIN_REDRAW."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual.app import App

from ..messages import FleetChanged

MIN_REDRAW = 0.1
TELEMETRY_REDRAW = 1.0
TELEMETRY = frozenset({"last", "series", "heartbeat", "gpu", "events", "cost"})


def later(delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
    """A one-shot delay on the app's loop (called on the app thread). A Textual Timer costs a
    task and its messages per use; these fire 10-20 times a second under a fleet."""
    return asyncio.get_running_loop().call_later(delay, callback)


class Redraw:
    def __init__(
        self,
        app: App[Any],
        changed: Callable[[set[str]], None] = lambda tags: None,
        clock: Callable[[], float] = time.monotonic,
        schedule: Callable[[float, Callable[[], None]], Any] = later,
    ) -> None:
        self.app = app
        self.changed = changed  # told every tag set as it comes (before the throttle)
        self._clock, self._schedule = clock, schedule
        self._tags: set[str] = set()
        self._last = -TELEMETRY_REDRAW
        self._timer: Any = None  # an asyncio.TimerHandle (or what `schedule` gave)
        self._due = 0.0  # when the pending timer fires
        self.flushes = 0  # redraws asked for so far

    def publish(self, tags: set[str]) -> None:
        """Say the fleet changed: within MIN_REDRAW of the last redraw at the soonest, within
        TELEMETRY_REDRAW when only telemetry changed (tags accumulate meanwhile)."""
        self.changed(tags)
        self._tags |= tags
        if not self._tags:
            return
        gap = MIN_REDRAW if self._tags - TELEMETRY else TELEMETRY_REDRAW
        due = self._last + gap
        if self._timer is not None:
            if due >= self._due:
                return  # the pending redraw comes soon enough
            self._timer.cancel()  # a structural change: sooner than the telemetry's redraw
            self._timer = None
        wait = due - self._clock()
        if wait > 0:
            self._due = due
            self._timer = self._schedule(wait, self._flush)
        else:
            self._flush()

    @property
    def pending(self) -> bool:
        """A change is waiting for its redraw (tests wait on this, not on a sleep)."""
        return self._timer is not None or bool(self._tags)

    def _flush(self) -> None:
        self._timer = None
        tags, self._tags = frozenset(self._tags), set()
        self._last = self._clock()
        self.flushes += 1
        if tags:
            self.app.post_message(FleetChanged(tags))
