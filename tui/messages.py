"""App-wide messages: what the app's services tell the app, and what the app tells every screen.
(Messages a widget sends live nested in that widget's class.)"""

from __future__ import annotations

from textual.message import Message

from .fleet import JobModel
from .fleet.costs import CostBoard


class FleetUpdated(Message, bubble=False):
    """Sent by the app to every screen on the stack when the fleet model changed; `tags` are the
    Fleet's change tags ("hosts", "job", "state", "series", "gpu", "cost", …) plus "clock" each second."""

    def __init__(self, tags: frozenset[str]) -> None:
        super().__init__()
        self.tags = tags


class FleetChanged(Message, bubble=False):
    """From the connection service to the app (at most ~10 a second); the app fans it out as
    FleetUpdated to the screens."""

    def __init__(self, tags: frozenset[str]) -> None:
        super().__init__()
        self.tags = tags


class InboxPending(Message, bubble=False):
    """Something arrived in the connection service's inbox. Replaces an undelivered one: a burst is
    one drain."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, InboxPending)


class JobEnded(Message, bubble=False):
    def __init__(self, job: JobModel) -> None:
        super().__init__()
        self.job = job


class HostKeyChangedNotice(Message, bubble=False):
    """A host's SSH key changed: the app warns once; the UI can never accept it."""

    def __init__(self, host: str, error: BaseException) -> None:
        super().__init__()
        self.host, self.error = host, error


class CostBoardUpdated(Message, bubble=False):
    """A new board from the cost engine's thread; replaces one not yet handled."""

    def __init__(self, board: CostBoard) -> None:
        super().__init__()
        self.board = board

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CostBoardUpdated)


class CostNote(Message, bubble=False):
    """Something the cost engine could not do (a locked ledger, a bad record): said once."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
