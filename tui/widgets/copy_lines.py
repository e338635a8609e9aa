"""Copying log lines to the clipboard (issue 36, finding 10: lazygit's and k9s's copy): Textual's
App.copy_to_clipboard, an OSC 52 sequence the terminal (and tmux with set-clipboard on) puts on the
system clipboard — over SSH too. Terminals cap what they take, so a copy is bounded."""

from __future__ import annotations

from textual.app import App

from .failures import say

MAX_COPY_BYTES = 256 << 10  # what xterm, kitty, WezTerm and tmux all take in one OSC 52


def copy_lines(app: App[object], lines: list[str], where: str) -> None:
    """Put `lines` on the clipboard (cut to MAX_COPY_BYTES) and say how many went."""
    text, cut = "\n".join(lines), False
    if len(text.encode("utf-8", "replace")) > MAX_COPY_BYTES:
        text, cut = text.encode("utf-8", "replace")[:MAX_COPY_BYTES].decode("utf-8", "ignore"), True
    app.copy_to_clipboard(text)
    count = text.count("\n") + 1 if text else 0
    what = f"{count:,} line{'s' * (count != 1)} {where}" + (
        f" (cut at {MAX_COPY_BYTES >> 10} KiB)" if cut else ""
    )
    say(app, f"copied {what} to the clipboard (OSC 52)", "copy", timeout=3)
