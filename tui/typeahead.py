"""Keys typed while gpudeck starts (issue 36, finding 9): the terminal echoed them raw (they stayed on
the shell's screen after exit) and the app acted on them out of order, before its screens were up.
Echo is turned off as gpudeck starts, the typed-ahead bytes are dropped when the app is ready and
again at exit (so they do not land in the shell either). No Textual here: the CLI calls it first."""

from __future__ import annotations

import sys
from typing import IO, Any

try:
    import termios
except ImportError:  # not a POSIX terminal: nothing to hold
    termios = None  # type: ignore[assignment]


def _tty(stream: IO[str] | None) -> int | None:
    try:
        return stream.fileno() if stream is not None and stream.isatty() else None
    except (OSError, ValueError):
        return None


def hold(stream: IO[str] | None = None) -> list[Any] | None:
    """Stop the terminal echoing what is typed while gpudeck starts; the mode found, for release.
    (Textual restores the mode it found at its start — this one — so release puts echo back.)"""
    fd = _tty(sys.stdin if stream is None else stream)
    if fd is None or termios is None:
        return None
    try:
        found = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        return found
    except termios.error:
        return None


def flush(stream: IO[str] | None = None) -> None:
    """Drop what was typed and not yet read."""
    fd = _tty(sys.stdin if stream is None else stream)
    if fd is None or termios is None:
        return
    try:
        termios.tcflush(fd, termios.TCIFLUSH)
    except termios.error:
        pass


def release(found: list[Any] | None, stream: IO[str] | None = None) -> None:
    """At exit: drop what was typed (it would land in the shell) and put back the mode found."""
    flush(stream)
    fd = _tty(sys.stdin if stream is None else stream)
    if fd is None or termios is None or found is None:
        return
    try:
        termios.tcsetattr(fd, termios.TCSANOW, found)
    except termios.error:
        pass
