"""The fleet view: one HostPanel per host, in a scrolling column."""

from __future__ import annotations

from textual.containers import VerticalScroll

from ..fleet import Fleet
from .host_panel import HostPanel


class FleetView(VerticalScroll):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._panels: dict[str, HostPanel] = {}

    def show(self, fleet: Fleet, now: float) -> None:
        for name in sorted(fleet.hosts, key=lambda h: (h != "local", h)):
            panel = self._panels.get(name)
            if panel is None:
                panel = self._panels[name] = HostPanel(name)
                self.mount(panel)
            panel.show(fleet, now)
