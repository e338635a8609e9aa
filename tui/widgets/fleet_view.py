"""The fleet view: one HostPanel per host, in a scrolling column. Only the panels in sight are
drawn; one scrolled into sight catches up then (a fleet of 64 hosts shows three or four)."""

from __future__ import annotations

import time

from textual.containers import VerticalScroll

from ..fleet import Fleet
from .host_panel import HostPanel


class FleetView(VerticalScroll):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._panels: dict[str, HostPanel] = {}
        self._fleet: Fleet | None = None

    def show(self, fleet: Fleet, now: float) -> int:
        """Draw what changed in sight; returns how many panels were redrawn."""
        self._fleet = fleet
        drawn = 0
        for name in sorted(fleet.hosts, key=lambda h: (h != "local", h)):
            panel = self._panels.get(name)
            if panel is None:
                panel = self._panels[name] = HostPanel(name)
                self.mount(panel)
            if panel.drawn is None or self.in_sight(panel):  # a new panel is drawn once: its height
                drawn += panel.show(fleet, now)
        return drawn

    def in_sight(self, panel: HostPanel) -> bool:
        return self.display and panel.region.overlaps(self.region)

    def catch_up(self) -> None:
        """After a scroll, a resize or the tab coming back: the panels now in sight."""
        if self._fleet is not None:
            self.show(self._fleet, time.time())

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.call_after_refresh(self.catch_up)

    def on_resize(self) -> None:
        self.call_after_refresh(self.catch_up)
