"""`l`: a job's full output, any size, numbered; followed while it runs (`f` toggles follow; the
title says which), searched on the agent with `/` (then `n` / `N` for the next / previous match)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Input, Label

from ..fleet import Fleet
from ..live.logfile import Found, LogFile
from ..messages import FleetUpdated
from ..services import Connections
from ..services.background import background
from ..widgets.copy_lines import copy_lines
from ..widgets.failures import report
from ..widgets.footer import DeckFooter
from ..widgets.virtual_log import VirtualLog
from .footer_order import AppKeysFirst

MAX_COPY_LINES = 20_000  # a selection read for a copy (bounded again by bytes)


class LogScreen(AppKeysFirst):
    CSS_PATH = "job.tcss"
    AUTO_FOCUS = "#full-log"  # not the (hidden) search field: keys go to the log
    BINDINGS = [
        Binding("escape", "back", "Back", id="back"),
        Binding("f", "toggle_follow", "Follow", id="toggle_follow"),
        Binding("slash", "search", "Search", id="log_search", tooltip="find a text in the output"),
        Binding("n", "search_next", "Next", id="search_next", tooltip="the next match of the search"),
        Binding("N", "search_prev", "Prev", id="search_prev", tooltip="the previous match of the search"),
        Binding(
            "w", "toggle_wrap", "Wrap", id="log_wrap", tooltip="wrap long lines, or cut them (←/→ scroll)"
        ),
        Binding(
            "c", "copy", "Copy", id="copy_line", tooltip="copy the current line or the selection (OSC 52)"
        ),
        Binding(
            "v", "select", "Select", id="log_select", tooltip="mark a line: c copies from it to the current"
        ),
    ]

    def __init__(self, fleet: Fleet, connections: Connections, job_id: str) -> None:
        super().__init__()
        self.fleet, self.connections, self.job_id = fleet, connections, job_id
        self.term = ""
        self.searching = False
        self.no_match = False
        job = fleet.jobs.get(job_id)
        node = min(job.nodes.values(), key=lambda n: n.node, default=None) if job else None  # rank 0 prints
        self.host: str | None = node.host if node else None
        self.node = node.node if node else "0"
        self.label = f"output of {job.name if job and job.name else job_id}" + (
            f" on {self.host}" if self.host else ""
        )

    def compose(self) -> ComposeResult:
        yield Label(id="log-title", classes="screen-title")
        yield Input(placeholder="search the output (enter: find, esc: cancel)", id="log-search", compact=True)
        link = self.connections.links.get(self.host) if self.host else None
        yield VirtualLog(LogFile(link, self.job_id, self.node) if link else None, id="full-log")
        yield DeckFooter()

    def on_mount(self) -> None:
        self._title()

    @property
    def log_view(self) -> VirtualLog:
        return self.query_one(VirtualLog)

    def _title(self) -> None:
        log = self.log_view
        if self.job_id in self.fleet.removed and self.job_id not in self.fleet.jobs:
            parts = [self.label, "removed (gpudeck rm): its output is gone"]
        elif log.source is None:
            parts = [self.label, "this job's host is not configured"]
        else:
            lines = f"{log.total:,} lines" if log.ready else "indexing…"
            follow = "● following" if log.follow else "○ not following (f follows)"
            job = self.fleet.jobs.get(self.job_id)
            if job is not None and not job.active:  # nothing more will come: "following" would promise it
                # …but where the reader is still counts: scrolled up, `f`/`G` take them to the end
                follow = f"ended ({job.state})" + ("" if log.follow else " · ○ not following (f follows)")
            parts = [self.label, lines, follow]
        if log.wrap:
            parts.append("wrapped (w cuts)")
        elif log.x:
            parts.append(f"from column {log.x + 1} (← →)")
        if log.mark is not None:
            parts.append(f"selecting from line {log.mark + 1} (c copies, esc drops)")
        if log.error:
            parts.append(f"cannot read the output: {log.error}")
        if self.term:
            if self.searching:
                where = "searching…"
            elif log.match is not None and not self.no_match:
                where = f"line {log.match.line + 1}"
            else:
                where = "no match"
            parts.append(f"/{self.term}: {where} (n/N)")
        self.query_one("#log-title", Label).update(Content(" · ".join(parts)))  # names are not markup

    def on_fleet_updated(self, message: FleetUpdated) -> None:
        if "job" in message.tags and self.job_id in self.fleet.removed:
            self._title()  # removed while open: said instead of "0 lines · ● following"

    def on_virtual_log_follow_changed(self, _: VirtualLog.FollowChanged) -> None:
        self._title()

    def on_virtual_log_changed(self, _: VirtualLog.Changed) -> None:
        self._title()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("search_next", "search_prev") and not self.term:
            return None
        return True

    def action_back(self) -> None:
        field = self.query_one("#log-search", Input)
        if self.log_view.mark is not None and not field.display:
            self.action_select()  # esc drops the selection first
        elif field.display:
            field.display = False
            self.log_view.focus()
        else:
            self.app.pop_screen()

    def action_toggle_follow(self) -> None:
        self.log_view.toggle_follow()

    def action_toggle_wrap(self) -> None:
        self.log_view.toggle_wrap()

    def action_select(self) -> None:
        log = self.log_view
        log.mark = None if log.mark is not None else log.current()
        log.refresh()
        self._title()

    def action_copy(self) -> None:
        log, picked = self.log_view, self.log_view.selection()
        if picked is None or log.source is None:
            return
        first, last = picked
        known = [log.text_of(i) for i in range(first, last + 1)]
        log.mark = None
        log.refresh()
        self._title()
        if all(t is not None for t in known):
            copy_lines(self.app, [t or "" for t in known], self._lines_label(first, last))
            return
        source, count = log.source, min(last - first + 1, MAX_COPY_LINES)
        background(self).run(
            self,
            lambda: source.read_lines(first, count),
            group="log-copy",
            exclusive=True,
            done=lambda got: copy_lines(self.app, [t for _, t in got], self._lines_label(first, last)),
            failed=lambda error: report(self, "copy", error),
        )

    def _lines_label(self, first: int, last: int) -> str:
        return f"(line {first + 1})" if first == last else f"(lines {first + 1}–{last + 1})"

    def action_search(self) -> None:
        field = self.query_one("#log-search", Input)
        field.display = True
        field.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.display = False
        log = self.log_view
        log.focus()
        self.term = event.value.strip()
        log.match = None
        self.refresh_bindings()
        if log.source is not None and self.term:
            self._find(log.start_of(log.top), backward=False, from_view=log.top)

    def action_search_next(self) -> None:
        self._jump(backward=False)

    def action_search_prev(self) -> None:
        self._jump(backward=True)

    def _jump(self, backward: bool) -> None:
        log = self.log_view
        if log.source is None or not self.term:
            return
        after = log.match if log.match is not None else log.start_of(log.top)
        self._find(after, backward, from_view=None if log.match is not None else log.top)

    def _find(self, after: Found | tuple[int, int], backward: bool, from_view: int | None) -> None:
        """Search on the agent, in a worker. A search from the view starts at the indexed line at
        or before its top; a match above the view's top is skipped once, so `/` finds from the view."""
        source, term = self.log_view.source, self.term
        assert source is not None

        def run() -> Found | None:
            hit = source.find(term, after, backward)
            while hit is not None and from_view is not None and not backward and hit.line < from_view:
                nxt = source.find(term, hit, backward)  # above the view: the next one…
                if nxt is None or nxt.line <= hit.line:
                    return nxt  # …unless it wrapped: nothing below the view, the first from the top
                hit = nxt
            return hit

        self.searching = True
        self._title()
        background(self).run(
            self, run, group="log-search", exclusive=True, done=self._found, failed=self._search_failed
        )

    def _found(self, hit: Found | None) -> None:
        log = self.log_view
        self.searching = False
        self.no_match = hit is None
        if hit is not None:
            log.match = hit
            log.show_line(hit.line)
            log.refresh()
        self._title()

    def _search_failed(self, error: BaseException) -> None:
        self.searching = False
        self.log_view.error = str(error)
        self._title()
