"""The fleet view: one HostPanel per host, in a scrolling column. Only the panels in sight are
drawn; one scrolled into sight catches up then (a fleet of 64 hosts shows three or four)."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.containers import VerticalScroll
from textual.widget import Widget

from ..fleet import Fleet
from .host_panel import HostPanel


class FleetView(VerticalScroll):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._panels: dict[str, HostPanel] = {}
        self._fleet: Fleet | None = None
        self.clock: Callable[[], float] = time.time  # the catch-up's clock (a test stops it)

    def show(self, fleet: Fleet, now: float) -> int:
        """Draw what changed in sight; returns how many panels were redrawn."""
        self._fleet = fleet
        for name in sorted(fleet.hosts, key=lambda h: (h != "local", h)):
            if name not in self._panels:
                self._panels[name] = HostPanel(name)
                self.mount(self._panels[name])
        sight = self.panels_in_sight()
        # A new panel is drawn once, wherever it is: that gives it its height; and again once laid
        # out at another width than it was drawn for (a GPU takes 1 line at 80 columns, 2 when
        # wider), or its height would change only when scrolled to, and a scroll to the end would
        # stop short of it.
        return sum(
            p.show(fleet, now)
            for p in self._panels.values()
            if p.drawn is None or p in sight or (p.size.width and p.drawn_width != p.size.width)
        )

    def panels_in_sight(self) -> set[HostPanel]:
        """From the scroll position and the panels' laid-out heights, not from the screen's last
        frame: right after a scroll or a tab switch that frame is not drawn yet."""
        if not all(node.display for node in self.ancestors_with_self if isinstance(node, Widget)):
            return set()  # a hidden tab
        top = round(self.scroll_y)
        bottom = top + self.scrollable_content_region.height
        seen: set[HostPanel] = set()
        y = 0
        for panel in self.query_children(HostPanel):
            if y >= bottom:
                break  # the rest lie below the window: 64 hosts' styles are not looked up per draw
            margin = panel.styles.margin
            height = panel.outer_size.height + margin.top + margin.bottom
            if y + height > top:
                seen.add(panel)
            y += height
        return seen

    def in_sight(self, panel: HostPanel) -> bool:
        return panel in self.panels_in_sight()

    def catch_up(self) -> None:
        """After a scroll, a resize or the tab coming back: the panels now in sight."""
        if self._fleet is not None:
            self.show(self._fleet, self.clock())

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.call_after_refresh(self.catch_up)

    def on_resize(self) -> None:
        self.call_after_refresh(self.catch_up)
