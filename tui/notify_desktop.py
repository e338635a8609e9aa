"""Desktop notifications for the TUI user (`[notify] desktop`): a job's end, failure, budget or
idle stop seen while the TUI is open, as the terminal's own notification escapes (OSC 9: iTerm2,
kitty, WezTerm, Windows Terminal…; OSC 777: rxvt, foot, Ghostty, VTE) and, where present,
`notify-send`; and a job's stall, once per stall. No Textual here: the app passes the terminal's
writer; the app runs `notify_send` in a worker (it is a process start)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable

from .fleet.jobs import JobModel

MAX_TEXT = 200  # a notification is a line, not a log


def _clean(text: str, drop: str = "") -> str:
    """No control character (an ESC or BEL would end the escape early, or start another) and none
    of `drop` (OSC 777 splits its fields on `;`)."""
    kept = "".join(" " if (ord(c) < 32 or ord(c) == 127 or c in drop) else c for c in text)
    return kept[:MAX_TEXT]


def escapes(title: str, body: str) -> str:
    """OSC 9 (one message) and OSC 777 (title and body), each ended by BEL."""
    return f"\x1b]9;{_clean(title)}: {_clean(body)}\x07\x1b]777;notify;{_clean(title, ';')};{_clean(body, ';')}\x07"


def notify_send(title: str, body: str) -> bool:
    """`notify-send TITLE BODY` when it is installed (a Linux desktop); False when it is not."""
    exe = shutil.which("notify-send")
    if exe is None:
        return False
    try:
        subprocess.run([exe, "--app-name=gpudeck", _clean(title), _clean(body)], timeout=5, check=False,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return True


class StallNotices:
    """One notice per stall: a job is told when it becomes stalled (any node: the nodes of a hung
    multi-node job stall together, one notice for them), never again while it stays so, and again
    only after it came back (an `unstalled` is no news worth a notice)."""

    def __init__(self) -> None:
        self._told: set[str] = set()  # ids of the jobs stalled and already told

    def fresh(self, jobs: Iterable[JobModel]) -> list[tuple[JobModel, str]]:
        """The (job, why) of each stall not told yet; forgets the stalls that ended."""
        now: set[str] = set()
        out: list[tuple[JobModel, str]] = []
        for job in jobs:
            why = job.stalled  # None unless it runs
            if why:
                now.add(job.id)
                if job.id not in self._told:
                    out.append((job, why))
        self._told = now
        return out
