"""The TUI's share of `[notify]`'s user-side sending (tui/notify_late.py): a pass a few seconds
after start and one a minute, in a thread worker, when there is anything to tell (an apprise
target, or outages to watch). Only hosts the TUI's connections reached are asked, and only those
they gave up on count as failing (a host still connecting has not failed yet). A failure to send
is a notification, never a traceback."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.app import App

from ..fleet import Fleet
from ..notify_late import listing_pass, owes
from ..settings import NotifySettings
from ..widgets.failures import say
from .base import Service

PERIOD = 60.0  # seconds between passes: late by at most this, one `jobs` request per host
FIRST = 3.0  # the first pass, once the connections had a moment to come up


class LateNotify(Service):
    def __init__(self, app: App[Any], fleet: Fleet, agents: Any, notify: NotifySettings) -> None:
        super().__init__(app)
        self.fleet, self.agents, self.notify = fleet, agents, notify
        self.passes = 0  # passes done (tests wait on it)

    def start(self) -> None:
        if not owes(self.notify):
            return
        self.app.set_timer(FIRST, self._pass)
        self.app.set_interval(PERIOD, self._pass)

    def _pass(self) -> None:
        hosts = self.fleet.hosts
        up = [h for h, m in hosts.items() if m.status == "connected"]
        down = [h for h, m in hosts.items() if m.status == "unreachable"]

        def told(line: str) -> None:
            self.app.call_from_thread(partial(say, self.app, line, "notify", "warning"))

        def done(_: object) -> None:
            self.passes += 1

        self.in_thread(
            lambda: listing_pass(self.agents, self.notify, up, down, told),
            group="notify-late",
            exclusive=True,
            done=done,
            failed=lambda exc: say(self.app, f"gpudeck: notify: {exc}", "notify", "warning"),
        )
