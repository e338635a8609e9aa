"""The full log: a job's whole output.log, numbered, drawn a screenful at a time.

Only the lines in view (and a screen either side) are read, by byte range through a LogFile, in
thread workers; the line index grows in a worker too, and the file's last 64 KiB are shown (without
numbers) while the first index is built, so any size opens at once and nothing is capped. While the job runs the index is extended every FOLLOW_PERIOD s, and, following, the view
keeps to the last line. Text reaches the screen as plain segments: output is never markup.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from textual.binding import Binding
from textual.events import MouseScrollUp
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..live.logfile import Found, LogFile
from ..services.background import background
from .log_rows import Row, rows

FOLLOW_PERIOD = 1.0
MARGIN = 1.0  # screens read beyond the view either side, so a page key finds its lines ready
TAIL_BYTES = 64 << 10  # the end shown at once, before the index (line numbers) arrives


class VirtualLog(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("j", "vim_down", "Down", id="vim_down", show=False),
        Binding("k", "vim_up", "Up", id="vim_up", show=False),
        Binding("g", "vim_top", "First line", id="vim_top", show=False),
        Binding("G", "vim_bottom", "Last line", id="vim_bottom", show=False),
        Binding("pageup", "vim_page_up", "Page up", id="log_page_up", show=False),
        Binding("pagedown", "vim_page_down", "Page down", id="log_page_down", show=False),
        Binding("left,h", "shift(-8)", "Left", id="log_left", show=False),
        Binding("right,l", "shift(8)", "Right", id="log_right", show=False),
        Binding("home,0", "shift(0)", "Line start", id="log_line_start", show=False),
    ]
    COMPONENT_CLASSES = {
        "virtual-log--number",
        "virtual-log--match",
        "virtual-log--current",
        "virtual-log--selected",
    }
    DEFAULT_CSS = """
    VirtualLog { background: $surface; overflow-x: hidden; }
    VirtualLog > .virtual-log--number { color: $text-muted; }
    VirtualLog > .virtual-log--match { background: $accent 40%; }
    VirtualLog > .virtual-log--current { color: $text; text-style: bold reverse; }
    VirtualLog > .virtual-log--selected { background: $primary 30%; }
    """

    class FollowChanged(Message):
        """Following the output turned on or off (a key, or reading back)."""

        def __init__(self, log: VirtualLog, follow: bool) -> None:
            super().__init__()
            self.log, self.follow = log, follow

        @property
        def control(self) -> VirtualLog:
            return self.log

    class Changed(Message):
        """The index grew, or a read or a search failed: the screen's title redraws."""

    def __init__(self, source: LogFile | None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = source
        self.follow = True
        self.ready = False  # the first index arrived
        self.error: str | None = None
        self.match: Found | None = None
        self._rows: dict[int, tuple[int, str]] = {}  # line -> (offset, text), the window read last
        # The file's last lines, read at once while the index is built (their numbers unknown yet),
        # and the file's size when they were read.
        self._tail: list[tuple[int, str]] = []
        self._tail_size = -1
        self._window = (0, 0)  # lines [first, last) asked for (or being read)
        self.wrap = False  # long lines: cut at the edge (scrolled sideways by `x`) or wrapped
        self.x = 0  # the first column shown of each line, when cut
        self.mark: int | None = None  # `v`: the selection's other end; the current line is the first
        self._shown: list[Row] = []  # the rows drawn last (their lines: what is in view)
        self._current: int | None = None

    @property
    def total(self) -> int:
        """Lines shown: the file's, once indexed; before, the last lines read."""
        if not self.ready:
            return len(self._tail)
        return self.source.total if self.source else 0

    @property
    def top(self) -> int:
        return int(self.scroll_y)

    def text_of(self, line: int) -> str | None:
        """The line's text when it is read (tests and the title use it)."""
        row = (
            self._rows.get(line)
            if self.ready
            else (self._tail[line] if 0 <= line < len(self._tail) else None)
        )
        return row[1] if row else None

    def current(self) -> int | None:
        """The line `c` copies: the search's match while it is in view, else the last line in view
        (while following, the newest)."""
        shown = self.rows_in_view()
        if not shown:
            return None
        if self.match is not None and any(r.line == self.match.line for r in shown):
            return self.match.line
        return shown[-1].line

    def selection(self) -> tuple[int, int] | None:
        """The lines [first, last] that `c` copies: from the mark to the current line, or the current."""
        cur = self.current()
        if cur is None:
            return None
        return (min(cur, self.mark), max(cur, self.mark)) if self.mark is not None else (cur, cur)

    def rows_in_view(self) -> list[Row]:
        digits = len(str(max(1, self.total))) + 1 if self.ready else 2
        return rows(
            self.top,
            self.total,
            max(1, self.size.height),
            max(1, self.size.width - digits),
            self.text_of,
            wrap=self.wrap,
            x=self.x,
            from_end=self.follow and self.ready,
        )

    def action_shift(self, columns: int) -> None:
        """Sideways through cut lines (`left`/`right`; `home`: back to column 0)."""
        self.x = 0 if columns == 0 else max(0, self.x + columns)
        self.refresh()
        self.post_message(self.Changed())

    def toggle_wrap(self) -> None:
        self.wrap, self.x = not self.wrap, 0
        self.refresh()
        self.post_message(self.Changed())

    def start_of(self, line: int) -> tuple[int, int]:
        """(line, its first byte) when the line is read, else the indexed line start before it."""
        row = self._rows.get(line)
        if row is not None:
            return line, row[0]
        if not self.ready or self.source is None:
            return 0, 0  # the tail's numbers are not known yet: from the start
        return self.source.mark_before(line)

    # -- following -------------------------------------------------------------------------------

    def set_follow(self, on: bool) -> None:
        if on:
            self.scroll_end(animate=False, immediate=True, force=True)
        if on != self.follow:
            self.follow = on
            self.post_message(self.FollowChanged(self, on))

    def toggle_follow(self) -> None:
        self.set_follow(not self.follow)

    # -- keys --------------------------------------------------------------------------------------

    def action_vim_down(self) -> None:
        self.scroll_down(animate=False, immediate=True)

    def action_vim_up(self) -> None:
        self.set_follow(False)  # reading back: new lines must not pull the view down
        self.scroll_up(animate=False, immediate=True)

    def action_vim_top(self) -> None:
        self.set_follow(False)
        self.scroll_home(animate=False, immediate=True)

    def action_vim_bottom(self) -> None:
        self.set_follow(True)

    def action_vim_page_up(self) -> None:
        self.set_follow(False)
        self.scroll_page_up(animate=False)

    def action_vim_page_down(self) -> None:
        self.scroll_page_down(animate=False)

    def _on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        self.set_follow(False)
        super()._on_mouse_scroll_up(event)

    def show_line(self, line: int) -> None:
        """Put `line` near the top of the view and stop following (the user is reading)."""
        self.set_follow(False)
        self.scroll_to(y=max(0, line - 2), animate=False, immediate=True, force=True)

    # -- the index ---------------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self.source is not None:
            source = self.source
            # only a head start: a failure is the index's to say
            background(self).run(
                self,
                lambda: source.read_tail(TAIL_BYTES),
                group="log-tail",
                done=lambda got: self._tail_read(*got),
            )
            self._index()

    def _tail_read(self, size: int, rows: list[tuple[int, str]]) -> None:
        if self.ready:
            return  # the index came first
        self._tail, self._tail_size = rows, size
        self.virtual_size = Size(0, len(rows))
        self.scroll_end(animate=False, immediate=True, force=True)
        self.refresh()

    def _index(self) -> None:
        if self.is_attached and self.source is not None:
            background(self).run(
                self,
                self.source.refresh_index,
                group="log-index",
                exclusive=True,
                done=lambda grew: self._indexed(bool(grew)),
                failed=lambda error: self._failed(error, self._index),
            )

    def _indexed(self, grew: bool) -> None:
        first = not self.ready
        self.ready, self.error = True, None
        if first and self.source is not None and self._tail and self._tail_size == self.source.size:
            # The tail on screen is the file's end: numbered now, drawn on while the window is read.
            base = self.source.total - len(self._tail)
            self._rows = {base + i: row for i, row in enumerate(self._tail)}
        self._tail = []
        if grew or first:
            shown = self.virtual_size.height  # the line count drawn so far
            self.virtual_size = Size(0, self.total)  # lines are cut at the edge: no sideways scroll
            if self.follow:
                self.scroll_end(animate=False, immediate=True, force=True)
            if first or self._window[1] >= shown:
                self._window = (0, 0)  # it held the last line, which may have grown: read again
            self._need()
            self.post_message(self.Changed())
        if self.source is not None and not self.source.done:  # over: every byte was in the file then
            self.set_timer(FOLLOW_PERIOD, self._index)

    # -- reading the lines in view -------------------------------------------------------------------

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._need()

    def on_resize(self) -> None:
        if self.ready:
            self.virtual_size = Size(0, self.total)  # lines are cut at the edge: no sideways scroll
            self._need()

    def _need(self) -> None:
        """Read the lines around the view unless they are read or being read."""
        if self.source is None or not self.ready:
            return
        height = max(1, self.size.height)
        top, bottom = self.top, min(self.total, self.top + height)
        if self._window[0] <= top and bottom <= self._window[1]:
            return
        margin = int(height * MARGIN)
        first = max(0, top - margin)
        count = (bottom + margin) - first
        self._window = (first, first + count)
        source = self.source
        background(self).run(
            self,
            lambda: source.read_lines(first, count),
            group="log-read",
            exclusive=True,
            done=lambda rows: self._read(first, rows),
            failed=lambda error: self._failed(error, self._need),
        )

    def _read(self, first: int, rows: list[tuple[int, str]]) -> None:
        self._rows = {first + i: row for i, row in enumerate(rows)}
        self.refresh()

    def _failed(self, error: BaseException, again: Callable[[], None]) -> None:
        self.error = str(error) or type(error).__name__
        self._window = (0, 0)
        self.post_message(self.Changed())
        self.set_timer(2.0, again)

    # -- drawing -------------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            self._shown = self.rows_in_view()  # once a frame: rows depend on the lines above them
        if y >= len(self._shown):
            return Strip.blank(width, base)
        row = self._shown[y]
        digits = len(str(max(1, self.total)))
        number = self.get_component_rich_style("virtual-log--number")
        if not self.ready:  # the tail, before its numbers are known
            gutter = "· " if row.first else "  "
            return Strip([Segment(gutter, base + number), Segment(row.text, base)]).crop_extend(
                0, width, base
            )
        style = base
        selected = self.selection() if self.mark is not None else None
        if self.match is not None and self.match.line == row.line:
            style = base + self.get_component_rich_style("virtual-log--match")
        elif selected is not None and selected[0] <= row.line <= selected[1]:
            style = base + self.get_component_rich_style("virtual-log--selected")
        gutter_style = base + number
        if row.line == self._current:
            gutter_style = base + self.get_component_rich_style("virtual-log--current")  # what c copies
        gutter = f"{row.line + 1:>{digits}}" if row.first else " " * digits
        return Strip(
            [Segment(gutter, gutter_style), Segment(" ", base), Segment(row.text, style)]
        ).crop_extend(0, width, style)
