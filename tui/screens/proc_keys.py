"""The process view's own keys beyond stop/kill: move (j/k), sort (`<`/`>`, `O` reverses), tree
(`T`), and a signal to the selected process (`x` TERM, `i` INT, `X` KILL — asking first). A mixin of
ProcessesScreen, kept apart so each file does one job."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable

from ..actions.proc_signal import signal_process
from ..actions.procs import ProcRow, ProcTable
from ..fleet import JobModel
from ..services import Connections
from ..services.background import background
from ..services.jobs import refused_read_only
from ..widgets.failures import report, say
from .confirm import ConfirmScreen
from .proc_order import SORTS, Order

_KEYS: list[BindingType] = [
    Binding("q", "app.quit", "Quit", id="quit"),  # a modal hides the app's keys: q quits here too
    Binding("j", "cursor('down')", "Down", show=False, id="procs_down"),
    Binding("k", "cursor('up')", "Up", show=False, id="procs_up"),
    Binding("greater_than_sign", "sort(1)", "Sort", id="procs_sort_next", tooltip="sort by the next column"),
    Binding("less_than_sign", "sort(-1)", "Sort back", id="procs_sort_prev", show=False),
    Binding("O", "reverse_sort", "Reverse", id="procs_sort_reverse", tooltip="reverse the sort"),
    Binding("T", "tree", "Tree", id="procs_tree", tooltip="parents and their children"),
    Binding("x", "signal('TERM')", "TERM", id="procs_term", tooltip="SIGTERM the selected process (asks)"),
    Binding("i", "signal('INT')", "INT", id="procs_int", tooltip="SIGINT the selected process (asks)"),
    Binding("X", "signal('KILL')", "KILL", id="procs_sigkill", tooltip="SIGKILL the selected process (asks)"),
]


class ProcKeys(Screen[None]):
    BINDINGS = _KEYS
    order = Order()
    table: ProcTable | None
    connections: Connections
    rows_shown: list[ProcRow]

    def job(self) -> JobModel | None:
        raise NotImplementedError

    def show(self, table: ProcTable) -> None:
        raise NotImplementedError

    def _redraw(self, order: Order) -> None:
        self.order = order
        if self.table is not None:
            self.show(self.table)

    def action_cursor(self, where: str) -> None:
        grid = self.query_one(DataTable)
        grid.action_cursor_down() if where == "down" else grid.action_cursor_up()

    def action_sort(self, step: int) -> None:
        self._redraw(replace(self.order, sort=(self.order.sort + step) % len(SORTS)))

    def action_reverse_sort(self) -> None:
        self._redraw(replace(self.order, reverse=not self.order.reverse))

    def action_tree(self) -> None:
        self._redraw(replace(self.order, tree=not self.order.tree))

    def selected(self) -> ProcRow | None:
        grid = self.query_one(DataTable)
        rows = self.rows_shown
        return rows[grid.cursor_row] if grid.row_count and 0 <= grid.cursor_row < len(rows) else None

    def check_signal(self) -> str | None:
        """Why no signal can go to the selected process now, or None."""
        job, row = self.job(), self.selected()
        if job is None:
            return "a GPU's processes belong to no job gpudeck can check: use the job's process view"
        if row is None:
            return "no process selected"
        if row.role == "supervisor":
            return "that is the job's supervisor: stop (s) or kill (K) the job instead"
        return None

    def action_signal(self, name: str) -> None:
        why = self.check_signal()
        if why is not None:
            say(self.app, why, f"SIG{name}", "warning")
            return
        if refused_read_only(self.app, f"SIG{name}"):
            return
        job, row = self.job(), self.selected()
        assert job is not None and row is not None
        detail = f"{row.command[:120]} on {row.host} (node {row.node})"
        self.app.push_screen(
            ConfirmScreen(f"Send SIG{name} to PID {row.pid}?", detail, f"SIG{name}"),
            lambda yes: self._send(job.id, row, name) if yes else None,
        )

    def _send(self, job_id: str, row: ProcRow, name: str) -> None:
        def sent(_: Any) -> None:
            say(self.app, f"SIG{name} sent to PID {row.pid} on {row.host}", "signal")

        background(self).run(
            self,
            lambda: signal_process(self.connections, row.host, row.node, job_id, row.pid, name),
            group="signal",
            done=sent,
            failed=lambda error: report(self.app, f"SIG{name} not sent", error, "error"),
        )
