"""`l`: a job's full output, followed while it runs (`f` toggles follow; the title says which),
searched with `/` (then `n` / `N` for the next / previous match)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Input, Label

from ..fleet import Fleet
from ..services import Connections
from ..widgets.footer import DeckFooter
from ..widgets.output_log import OutputLog
from .footer_order import AppKeysFirst

FULL_LOG_BYTES = 16 << 20  # beyond this, the start is skipped (and said so): `gpudeck logs` has it all


class LogScreen(AppKeysFirst):
    CSS_PATH = "job.tcss"
    AUTO_FOCUS = "#full-log"  # not the (hidden) search field: keys go to the log
    BINDINGS = [
        Binding("escape", "back", "Back", id="back"),
        Binding("f", "toggle_follow", "Follow", id="toggle_follow"),
        Binding("slash", "search", "Search", id="log_search", tooltip="find a text in the output"),
        Binding("n", "search_next", "Next", id="search_next", tooltip="the next match of the search"),
        Binding("N", "search_prev", "Prev", id="search_prev", tooltip="the previous match of the search"),
    ]

    def __init__(self, fleet: Fleet, connections: Connections, job_id: str) -> None:
        super().__init__()
        self.fleet, self.connections, self.job_id = fleet, connections, job_id
        self.term = ""
        self.found: int | None = None  # the line of the current match
        job = fleet.jobs.get(job_id)
        node = next(iter(job.nodes.values()), None) if job else None
        self.host, self.node = (node.host, node.node) if node else (None, "0")
        self.label = f"output of {job.name if job and job.name else job_id}" + (f" on {self.host}" if self.host else "")

    def compose(self) -> ComposeResult:
        yield Label(id="log-title", classes="screen-title")
        yield Input(placeholder="search the output (enter: find, esc: cancel)", id="log-search", compact=True)
        link = self.connections.links.get(self.host) if self.host else None
        yield OutputLog(link, self.job_id, self.node, FULL_LOG_BYTES, id="full-log")
        yield DeckFooter()

    def on_mount(self) -> None:
        self._title()

    def _title(self) -> None:
        log = self.query_one(OutputLog)
        parts = [self.label, "following" if log.follow else "not following (f follows)"]
        if self.term:
            where = f"line {self.found + 1}" if self.found is not None else "no match"
            parts.append(f"/{self.term}: {where} (n/N)")
        self.query_one("#log-title", Label).update(Content(" · ".join(parts)))  # names are not markup

    def on_output_log_follow_changed(self, _: OutputLog.FollowChanged) -> None:
        self._title()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("search_next", "search_prev") and not self.term:
            return None
        return True

    def action_back(self) -> None:
        field = self.query_one("#log-search", Input)
        if field.display:
            field.display = False
            self.query_one(OutputLog).focus()
        else:
            self.app.pop_screen()

    def action_toggle_follow(self) -> None:
        self.query_one(OutputLog).toggle_follow()

    def action_search(self) -> None:
        field = self.query_one("#log-search", Input)
        field.display = True
        field.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.display = False
        self.term = event.value.strip()
        self.found = None
        log = self.query_one(OutputLog)
        log.focus()
        self._jump(True, start=int(log.scroll_y) - 1)
        self.refresh_bindings()

    def action_search_next(self) -> None:
        self._jump(True)

    def action_search_prev(self) -> None:
        self._jump(False)

    def _jump(self, forward: bool, start: int | None = None) -> None:
        log = self.query_one(OutputLog)
        if start is None:
            start = self.found if self.found is not None else int(log.scroll_y)
        self.found = log.find(self.term, start, forward)
        if self.found is not None:
            log.show_line(self.found)
        self._title()
