"""App-wide messages. (Messages a widget sends live nested in that widget's class.)"""

from __future__ import annotations

from textual.message import Message


class FleetUpdated(Message, bubble=False):
    """Sent by the app to every screen on the stack when the fleet model changed; `tags` are the
    Fleet's change tags ("hosts", "job", "state", "series", "gpu", …) plus "clock" each second."""

    def __init__(self, tags: frozenset[str]) -> None:
        super().__init__()
        self.tags = tags
