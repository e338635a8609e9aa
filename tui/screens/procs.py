"""`p`: a job's processes, node by node: the command's and the supervisor's PIDs from the agent's job
object and journal, and the processes NVML sees on the job's GPUs (with their GPU memory). CPU and
RSS per process are not in what the agent reports: the view says so instead of showing zeros."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from ..fleet import Fleet, JobModel

NOT_AVAILABLE = ("CPU and RSS per process: not available — the agent's job object carries PIDs only "
                 "(GPU memory comes from NVML where the driver answers).")


def process_rows(job: JobModel) -> list[tuple[str, str, str, str, str, str]]:
    """(host, node, what, pid, CPU, memory) for each process known of the job."""
    rows: list[tuple[str, str, str, str, str, str]] = []
    command_pids = {n.pid for n in job.nodes.values() if n.pid is not None}
    for n in sorted(job.nodes.values(), key=lambda n: n.node):
        gone = "" if job.active or n.state == "lost" else " (ended)"
        rows.append((n.host, n.node, "command" + gone, str(n.pid) if n.pid is not None else "n/a", "n/a", "n/a"))
        rows.append((n.host, n.node, "supervisor" + gone,
                     str(n.supervisor_pid) if n.supervisor_pid is not None else "n/a", "n/a", "n/a"))
    if job.active:
        for key, gpu in sorted(job.gpu_latest.items()):
            host = job.gpu_host.get(key, "?")
            for p in gpu.processes:
                what = f"GPU {gpu.index}" + (" (the command)" if p.pid in command_pids else "")
                mem = f"{p.mem_mib:.0f} MiB GPU" if p.mem_mib is not None else "n/a"
                rows.append((host, "", what, str(p.pid), "n/a", mem))
    return rows


class ProcessesScreen(ModalScreen[None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [Binding("escape,p", "close", "Close", id="procs_close")]

    def __init__(self, fleet: Fleet, job_id: str) -> None:
        super().__init__(classes="modal")
        self.fleet, self.job_id = fleet, job_id

    def compose(self) -> ComposeResult:
        job = self.fleet.jobs.get(self.job_id)
        with Vertical(classes="dialog"):
            yield Label(Content(f"Processes of {job.name or job.id if job else self.job_id}"), classes="dialog-title")
            yield DataTable(cursor_type="row", classes="help-table", id="procs")
            yield Label(Content(NOT_AVAILABLE), classes="dialog-detail")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("host", "node", "what", "PID", "CPU", "memory")
        job = self.fleet.jobs.get(self.job_id)
        for row in process_rows(job) if job else []:
            table.add_row(*(Content(cell) for cell in row))  # host names are user text

    def action_close(self) -> None:
        self.dismiss(None)
