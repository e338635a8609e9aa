"""`esc` followed quickly by a key (issue 36, finding 9): Textual waits ESCAPE_DELAY (100 ms) after
an ESC for the rest of an escape sequence, and its input thread checks that wait only when `select`
times out (every 100 ms) — so a key that arrived 50 ms after esc joined it as alt+key and the esc
was lost. gpudeck waits 25 ms (what terminals and tmux take to send a whole sequence in one write;
`ESCDELAY=ms` in the environment overrides it, as for curses) and checks the wait before each read
is parsed, so a key after the wait is its own key."""

from __future__ import annotations

import os
from collections.abc import Iterable

from textual import constants
from textual._xterm_parser import XTermParser
from textual.drivers import linux_driver
from textual.message import Message

ESCAPE_DELAY_MS = 25


class TimelyParser(XTermParser):
    """Textual's parser that first ends a pending escape whose wait is over, then reads `data`."""

    def feed(self, data: str) -> Iterable[Message]:
        yield from self.tick()
        yield from super().feed(data)


def install() -> None:
    """For the real terminal only (`gpudeck`'s main): the shorter wait and the timely parser."""
    if "ESCDELAY" not in os.environ:
        constants.ESCAPE_DELAY = ESCAPE_DELAY_MS / 1000.0  # type: ignore[misc]  # Textual reads it per escape
    linux_driver.XTermParser = TimelyParser  # type: ignore[misc]  # the driver makes its parser by this name
