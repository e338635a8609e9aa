"""The supervisor's side of watching the host's keeper (keeper.py): it makes sure one runs at its start
(keeperstart.py), then holds a pidfd of it and looks again only when that process ends, instead of
opening keeper.lock every KEEPER_CHECK seconds (issue 33). Without a pidfd (Python 3.8, an older
keeper that wrote no pid) it checks every KEEPER_CHECK seconds as before. Standard library only."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from .keeperstart import KEEPER_CHECK, ensure_keeper, keeper_pid, wake_keeper
from .pidwatch import close_quietly, open_pidfd

RETRY_START = 1.0  # seconds: another supervisor was starting the keeper; see it running then


class KeeperWatch:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd: Optional[int] = None
        self._woken = False

    def fds(self) -> List[int]:
        """What the loop's wait includes: readable when the keeper ended."""
        return [] if self._fd is None else [self._fd]

    def check(self) -> Optional[float]:
        """A keeper runs (started here when none did); seconds until the next check, or None: the
        keeper's pidfd says when (the loop checks again when it is readable)."""
        close_quietly(self._fd)
        self._fd = None
        if not ensure_keeper(self.root):
            return RETRY_START
        if not self._woken:  # once, at this supervisor's start: its job is new, the keeper looks now
            self._woken = True
            wake_keeper(self.root)
        self._fd = open_pidfd(keeper_pid(self.root))
        return None if self._fd is not None else KEEPER_CHECK

    def close(self) -> None:
        close_quietly(self._fd)
        self._fd = None
