"""A job's output tail in the job view, pushed by the agent as it is written (`follow`).

The stream (tui/live/output_stream.py) is owned by the host's link through the Connections
service: it starts `tail_bytes` before the end, resumes from the next byte owed after a reconnect
(no line twice, none lost) and stops when the view closes. Lines are decoded on the reader thread
and written to the Log on the app thread when the stream says some are waiting.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import Reactive
from textual.widgets import Log

from ..live.output_stream import OutputStream
from .copy_lines import copy_lines

if TYPE_CHECKING:
    from ..services import Connections


TAIL_LINES = 10_000  # the job view's tail; the full log (l) has every line
TAKE_GAP = 0.25  # lines are written to the log at most 4 times a second: a job printing 500 lines/s
# costs a few redraws a second, not one per push (issue 36); the stream holds them meanwhile


class OutputLog(Log):
    BINDINGS = [
        Binding("j", "scroll_down", "Down", id="vim_down", show=False),
        Binding("k", "vim_up", "Up", id="vim_up", show=False),
        Binding("g", "vim_top", "First line", id="vim_top", show=False),
        Binding("G", "vim_bottom", "Last line", id="vim_bottom", show=False),
        Binding("c", "copy_line", "Copy", id="copy_line", tooltip="copy the last line in view (OSC 52)"),
    ]

    # Its height is the screen's to give (1fr), never its lines': more lines need its scrollbar
    # updated, not the whole job view laid out again (issue 36: a followed dense job relaid the
    # screen 4 times a second, most of the view's CPU). Only a scrollbar coming or going does.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        region = self.scrollable_content_region
        if (old.height > region.height) != (new.height > region.height) or (old.width > region.width) != (
            new.width > region.width
        ):
            self.refresh(layout=True)
        else:
            self._scroll_update(new)

    class FollowChanged(Message):
        """Following the output turned on or off (a key, or scrolling away from the end)."""

        def __init__(self, log: OutputLog, follow: bool) -> None:
            super().__init__()
            self.log, self.follow = log, follow

        @property
        def control(self) -> OutputLog:
            return self.log

    class Arrived(Message):
        """Lines wait in the stream (posted from the reader thread, at most one until taken)."""

    def __init__(
        self,
        connections: Connections | None,
        host: str | None,
        job_id: str,
        node: str,
        tail_bytes: int,
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id, max_lines=TAIL_LINES, auto_scroll=True)
        self.connections, self.host = connections, host
        self.stream = OutputStream(job_id, node, tail_bytes, lambda: self.post_message(self.Arrived()))
        self._said_skip = self._said_error = False
        self._taken_at = -TAKE_GAP
        self._take_due: asyncio.TimerHandle | None = None  # a take is scheduled (no wake until it)

    @property
    def follow(self) -> bool:
        return self.auto_scroll

    def toggle_follow(self) -> bool:
        self.set_follow(not self.auto_scroll)
        return self.auto_scroll

    def set_follow(self, on: bool) -> None:
        if on:
            self.scroll_end(animate=False)
        if on != self.auto_scroll:
            self.auto_scroll = on
            self.post_message(self.FollowChanged(self, on))

    def action_vim_up(self) -> None:
        self.set_follow(False)  # reading back: new lines must not pull the view down
        self.scroll_up(animate=False)

    def action_copy_line(self) -> None:
        """The last line in view (while following, the newest) to the clipboard."""
        if not self.lines:
            return
        line = min(
            len(self.lines) - 1, int(self.scroll_y) + max(1, self.scrollable_content_region.height) - 1
        )
        copy_lines(self.app, [self.lines[line]], f"(the output's line {line + 1} in view)")

    def action_vim_top(self) -> None:
        self.set_follow(False)
        self.scroll_home(animate=False)

    def action_vim_bottom(self) -> None:
        self.scroll_end(animate=False)

    def on_mount(self) -> None:
        if self.connections is None or self.host not in self.connections.links:
            self.write_line("(this job's host is not configured)")
            return
        self.connections.follow_output(self.host, self.stream)

    def on_unmount(self) -> None:
        if self._take_due is not None:
            self._take_due.cancel()
            self._take_due = None
        if self.connections is not None and self.host in self.connections.links:
            self.connections.unfollow_output(self.host, self.stream)

    def on_output_log_arrived(self, event: OutputLog.Arrived) -> None:
        event.stop()
        wait = self._taken_at + TAKE_GAP - time.monotonic()
        if wait > 0:
            if self._take_due is None:
                # A plain loop callback: a Textual Timer is a task and its messages, 4 times a second
                self._take_due = asyncio.get_running_loop().call_later(wait, self._take)
            return
        self._take()

    def _take(self) -> None:
        self._take_due = None
        self._taken_at = time.monotonic()
        lines = self.stream.take()
        if self.stream.skipped and not self._said_skip:
            self._said_skip = True
            self.write_line(f"… {self.stream.skipped:,} earlier bytes not shown (press l for the full log)")
        if lines:
            self.write_lines(lines)
        if self.stream.error and not self._said_error:
            self._said_error = True
            self.write_line(f"… the output cannot be followed: {self.stream.error}")
