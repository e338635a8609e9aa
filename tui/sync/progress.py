"""Sync progress for people: files, bytes and rate on stderr, shown only once a sync has taken
over a second (a quick one prints nothing), redrawn at most 5 times a second."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

SHOW_AFTER = 1.0
EVERY = 0.2


class ProgressLine:
    def __init__(self, label: str, files: int, size: int, out: TextIO | None = None) -> None:
        self.label, self.files, self.size = label, files, size
        self.out = out or sys.stderr
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False
        self.lock = threading.Lock()  # hosts upload in parallel, one line each in turn

    def __call__(self, files: int, sent: int, wire: int, done: bool = False) -> None:
        now = time.monotonic()
        if done:
            if self.shown:
                with self.lock:
                    self.out.write("\n")
                    self.out.flush()
            return
        if now - self.started < SHOW_AFTER or now - self.last < EVERY:
            return
        self.last = now
        with self.lock:
            self.out.write(
                f"\r{figures(self.label, files, self.files, sent, self.size, now - self.started)} "
                f"({wire / 1e6:.1f} MB sent)\x1b[K"
            )
            self.out.flush()
            self.shown = True


class ProgressNotes:
    """The same figures as one-line notes (the TUI's notifications): none for a sync under a second,
    then one every `every` seconds, and one when it ends."""

    def __init__(
        self, label: str, files: int, size: int, tell: Callable[[str], None], every: float = 2.0
    ) -> None:
        self.label, self.files, self.size, self.tell, self.every = label, files, size, tell, every
        self.started = time.monotonic()
        self.last = self.started
        self.told = False

    def __call__(self, files: int, sent: int, wire: int, done: bool = False) -> None:
        now = time.monotonic()
        if done:
            if self.told:
                self.tell(
                    f"{self.label}: {files} files, {sent / 1e6:.1f} MB sent in {now - self.started:.1f} s"
                )
            return
        if now - self.started < SHOW_AFTER or now - self.last < self.every:
            return
        self.last, self.told = now, True
        self.tell(figures(self.label, files, self.files, sent, self.size, now - self.started))


def figures(label: str, files: int, of_files: int, sent: int, size: int, seconds: float) -> str:
    """`sync H: 120/5000 files, 1.2/26.0 MB, 3.4 MB/s`: what both views of a sync's progress say."""
    rate = sent / max(seconds, 1e-6)
    return f"{label}: {files}/{of_files} files, {sent / 1e6:.1f}/{size / 1e6:.1f} MB, {rate / 1e6:.1f} MB/s"
