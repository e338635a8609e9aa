"""`p`: processes like htop/nvitop — a job's process tree node by node (or the processes on one GPU):
PID, role, CPU %, RSS, the GPUs each one is on with its GPU memory, and the command. The agents'
`procs` op measures them (tui/actions/procs.py, in a worker); the view asks again every few seconds.
`s`/`K` stop or kill the job through the same confirm path as everywhere."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from ..actions.procs import ProcRow, ProcTable, gpu_processes, job_processes
from ..fleet import Fleet, JobModel
from ..printable import printable
from ..services import Connections, JobControl
from ..services.background import background
from ..widgets.export_view import EXPORT_BINDING, export, table_rows
from .end_job import confirm_end
from .proc_keys import ProcKeys
from .proc_order import arranged

REFRESH = 2.0  # seconds between two askings (each one takes the agent's CPU interval too)
COLUMNS = ("host", "node", "PID", "role", "CPU %", "RSS", "GPU", "GPU mem", "command")
NARROW_BELOW = 120  # a terminal narrower than this drops node and GPU mem: the command gets the rest
NARROW_DROPS = ("node", "GPU mem")


def _mib(n_bytes: int | None) -> str:
    if n_bytes is None:
        return "n/a"
    mib = n_bytes / (1 << 20)
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def cells(row: ProcRow) -> tuple[str, ...]:
    """One table row; "n/a" where the agent could not measure, never a made-up zero."""
    gpus = ",".join("?" if i is None else str(i) for i, _ in row.gpus) or "–"
    known = [m for _, m in row.gpus if m is not None]
    gpu_mem = f"{sum(known):.0f} MiB" if known else ("n/a" if row.gpus else "–")
    cpu = "n/a" if row.cpu_percent is None else f"{row.cpu_percent:.0f}"
    return (
        row.host,
        row.node or "–",
        str(row.pid),
        row.role,
        cpu,
        _mib(row.rss_bytes),
        gpus,
        gpu_mem,
        row.command,
    )


class ProcessesScreen(ProcKeys, ModalScreen[None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [
        Binding("escape,p", "close", "Close", id="procs_close"),
        Binding("s", "stop_job", "Stop", id="procs_stop", tooltip="stop the job (asks first)"),
        Binding("K", "kill_job", "Kill", id="procs_kill", tooltip="SIGKILL the job's processes (asks first)"),
        EXPORT_BINDING,
    ]

    def action_export_view(self) -> None:
        """E: the processes shown, to CSV and JSON files."""
        export(self, "procs", *table_rows(self.query_one(DataTable)))

    def __init__(
        self,
        fleet: Fleet,
        connections: Connections,
        job_control: JobControl,
        *,
        job_id: str | None = None,
        gpu: tuple[str, int] | None = None,
    ) -> None:
        super().__init__(classes="modal")
        self.fleet, self.connections, self.job_control = fleet, connections, job_control
        self.job_id, self.gpu = job_id, gpu
        self.table: ProcTable | None = None  # the latest answer
        self.rows_shown: list[ProcRow] = []  # in the table's order
        self.shown = list(range(len(COLUMNS)))  # the columns that fit the terminal (on_mount)

    def job(self) -> JobModel | None:
        return self.fleet.jobs.get(self.job_id) if self.job_id else None

    def _title(self) -> str:
        if self.gpu is not None:
            return f"Processes on GPU {self.gpu[1]} of {self.gpu[0]}"
        job = self.job()
        return f"Processes of {job.name or job.id if job else self.job_id}"

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog procs-dialog"):
            yield Label(Content(self._title()), classes="dialog-title")  # names are user text
            yield DataTable(cursor_type="row", classes="help-table", id="procs")
            yield Label(Content("asking the agents…"), classes="dialog-detail", id="procs-status")

    def on_mount(self) -> None:
        narrow = self.app.size.width < NARROW_BELOW
        self.shown = [i for i, c in enumerate(COLUMNS) if not (narrow and c in NARROW_DROPS)]
        if narrow:  # the whole width, so the command column is more than its first 3 characters
            dialog = self.query_one(".procs-dialog")
            dialog.styles.width = "100%"
            dialog.styles.padding = (0, 1)
        self.query_one(DataTable).add_columns(*(COLUMNS[i] for i in self.shown))
        self._ask()

    # -- asking the agents: a one-shot worker, re-armed by a timer when it ends ------------------

    def _ask(self) -> None:
        if not self.is_attached:
            return
        job = self.job()
        if self.gpu is not None:
            host, index = self.gpu
            fn = lambda: gpu_processes(self.connections, host, index)  # noqa: E731
        elif job is not None:
            nodes = [(n.host, n.node) for n in job.nodes.values()]
            fn = lambda: job_processes(self.connections, nodes, job.id)  # noqa: E731
        else:
            return
        background(self).run(
            self,
            fn,
            group="procs",
            exclusive=True,
            done=self._answered,
            failed=lambda error: self._answered(None, error),
        )

    def _answered(self, table: ProcTable | None, error: BaseException | None = None) -> None:
        if table is not None:
            self.show(table)
        else:
            self._status(f"could not ask the agents: {error}")
        self.set_timer(REFRESH, self._ask)

    def show(self, table: ProcTable) -> None:
        self.table = table
        grid = self.query_one(DataTable)
        cursor = grid.cursor_row
        grid.clear()
        arranged_rows = arranged(table.rows, self.order)
        self.rows_shown = [row for row, _ in arranged_rows]
        for row, indent in arranged_rows:
            # Text, not str (parsed as markup) nor Content (not measured: columns would not widen);
            # printable: a process's command line is whatever it set
            *first, command = cells(row)
            texts = [*first, indent + command]
            grid.add_row(
                *(Text(printable(texts[i])) for i in self.shown), key=f"{row.host}/{row.node}/{row.pid}"
            )
        if grid.row_count:
            grid.move_cursor(row=min(cursor, grid.row_count - 1))
        job = self.job()
        notes = list(table.failures)
        if not table.rows and not table.failures:
            notes.append(
                "no live process" + (" (the job has ended)" if job is not None and job.ended else "")
            )
        total_cpu = sum(r.cpu_percent or 0 for r in table.rows)
        total_rss = sum(r.rss_bytes or 0 for r in table.rows)
        notes.append(
            f"{len(table.rows)} processes · CPU {total_cpu:.0f} % · RSS {_mib(total_rss)} · "
            f"every {REFRESH:.0f} s · {self.order.label()}"
        )
        keys = "s stop · K kill the job · x/i/X TERM/INT/KILL · " if self.check_action("stop_job", ()) else ""
        notes.append(
            keys + "</> sort · O reverse · T tree · esc close"
        )  # a modal has no Footer of its own: its keys, said here
        self._status(" · ".join(notes))
        self.refresh_bindings()

    def _status(self, line: str) -> None:
        self.query_one("#procs-status", Label).update(Content(line))  # remote errors are not markup

    # -- keys ------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("stop_job", "kill_job"):
            job = self.job()
            if job is None or job.ended or (job.watch is not None and job.watch.read_only):
                return None
        return True

    def action_stop_job(self) -> None:
        confirm_end(self, self.job_control, self.job(), "stop")

    def action_kill_job(self) -> None:
        confirm_end(self, self.job_control, self.job(), "kill")

    def action_close(self) -> None:
        self.dismiss(None)
