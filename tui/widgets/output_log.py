"""A job's output, read by byte offset and followed while the job runs (the job view's tail and
the full log screen). Reads are one-shot thread workers re-armed by a timer; lines are decoded
off the app thread and written to the Log on it."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Log
from textual.worker import Worker, WorkerState

from ..live.link import HostLink, LinkDown
from ..live.logtext import LogDecoder

CHUNK = 1 << 20
FOLLOW_PERIOD = 1.0


@dataclass
class _Read:
    lines: list[str]
    more: bool  # a full chunk came: read again at once
    done: bool  # the job is over and everything is read
    skipped: int  # bytes before where this view starts


class OutputLog(Log):
    BINDINGS = [
        Binding("j", "scroll_down", "Down", id="vim_down", show=False),
        Binding("k", "vim_up", "Up", id="vim_up", show=False),
        Binding("g", "vim_top", "First line", id="vim_top", show=False),
        Binding("G", "vim_bottom", "Last line", id="vim_bottom", show=False),
    ]

    class FollowChanged(Message):
        """Following the output turned on or off (a key, or scrolling away from the end)."""

        def __init__(self, log: OutputLog, follow: bool) -> None:
            super().__init__()
            self.log, self.follow = log, follow

        @property
        def control(self) -> OutputLog:
            return self.log

    def __init__(self, link: HostLink | None, job_id: str, node: str, tail_bytes: int, *, id: str | None = None) -> None:
        super().__init__(id=id, max_lines=50_000, auto_scroll=True)
        self.link, self.job_id, self.node, self.tail_bytes = link, job_id, node, tail_bytes
        self._offset: int | None = None
        self._decoder = LogDecoder()
        self._failed = False

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

    def action_vim_top(self) -> None:
        self.set_follow(False)
        self.scroll_home(animate=False)

    def action_vim_bottom(self) -> None:
        self.scroll_end(animate=False)

    def find(self, term: str, start: int, forward: bool = True) -> int | None:
        """The next line (wrapping around) after `start` (before it, backwards) holding `term`,
        case-insensitive; None when no line does."""
        needle, lines = term.lower(), self.lines
        n = len(lines)
        if not needle or not n:
            return None
        for i in range(1, n + 1):
            row = (start + i) % n if forward else (start - i) % n
            if needle in lines[row].lower():
                return row
        return None

    def show_line(self, row: int) -> None:
        """Scroll so that `row` is the view's first line, and stop following (the user is reading)."""
        self.set_follow(False)
        self.scroll_to(y=max(0, row - 2), animate=False)

    def on_mount(self) -> None:
        if self.link is None:
            self.write_line("(this job's host is not configured)")
            return
        self._read()

    def _read(self) -> None:
        if not self.is_attached:
            return  # a timer that fired as the screen closed
        self.run_worker(self._fetch, name="output", group="output", thread=True, exclusive=True,
                        exit_on_error=False)

    def _fetch(self) -> _Read:
        """Runs in a thread: the IO and the decoding."""
        assert self.link is not None
        skipped = 0
        if self._offset is None:
            size = self.link.logs(self.job_id, self.node, 0, limit=1).size  # the agent wants limit >= 1
            self._offset = skipped = max(0, size - self.tail_bytes)
        chunk = self.link.logs(self.job_id, self.node, self._offset, CHUNK)
        data = chunk.data
        if skipped and chunk.offset == skipped:
            cut = data.find(b"\n")  # starting mid-file: drop the partial first line
            data = data[cut + 1 :] if cut >= 0 else b""
        self._offset = chunk.offset + len(chunk.data)
        lines = self._decoder.feed(data)
        more = len(chunk.data) >= CHUNK
        done = chunk.done and not more and self._offset >= chunk.size
        if done and self._decoder.pending():
            lines.append(self._decoder.pending())
        return _Read(lines, more, done, skipped)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "output":
            return
        event.stop()
        if event.state == WorkerState.SUCCESS:
            got: _Read = event.worker.result  # type: ignore[assignment]
            if got.skipped:
                self.write_line(f"… {got.skipped:,} earlier bytes not shown (press l for the full log)")
            if got.lines:
                self.write_lines(got.lines)
            self._failed = False
            if got.more:
                self._read()
            elif not got.done:
                self.set_timer(FOLLOW_PERIOD, self._read)
        elif event.state == WorkerState.ERROR:
            if not self._failed:  # say it once, keep retrying quietly
                reason = event.worker.error
                self.write_line(f"… cannot read the output: {reason}")
                self._failed = True
            self.set_timer(5.0 if isinstance(event.worker.error, LinkDown) else 2.0, self._read)
