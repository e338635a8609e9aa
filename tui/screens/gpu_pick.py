"""`p` on the fleet: pick one GPU of the fleet (host, index, model, utilization, job on it); its
processes open next. A picker, so the host panels need no cursor of their own."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from ..fleet import Fleet
from ..widgets.gauges import gib, pct

PickedGpu = tuple[str, int]  # host, GPU index


def gpu_rows(fleet: Fleet) -> list[tuple[PickedGpu, tuple[str, ...]]]:
    """(key, cells) per GPU of every host, `local` first, in index order."""
    out: list[tuple[PickedGpu, tuple[str, ...]]] = []
    for name in sorted(fleet.hosts, key=lambda h: (h != "local", h)):
        for g in fleet.hosts[name].gpus:
            job = fleet.job_for_gpu(name, g.uuid)
            out.append(
                (
                    (name, g.index),
                    (
                        name,
                        str(g.index),
                        (g.name or "GPU").replace("NVIDIA ", ""),
                        pct(g.util),
                        f"{gib(g.mem_used_mib)}/{gib(g.mem_total_mib)}G",
                        (job.name or job.id) if job else "idle",
                    ),
                )
            )
    return out


class GpuPickScreen(ModalScreen[PickedGpu | None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="gpu_pick_cancel"),
        Binding("enter", "pick", "Processes", id="gpu_pick"),
    ]

    def __init__(self, fleet: Fleet) -> None:
        super().__init__(classes="modal")
        self.fleet = fleet
        self.keys: list[PickedGpu] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Which GPU's processes? (enter)", classes="dialog-title")
            yield DataTable(cursor_type="row", classes="help-table", id="gpu-pick")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("host", "GPU", "model", "util", "memory", "job")
        for key, row in gpu_rows(self.fleet):
            self.keys.append(key)
            table.add_row(*(Text(c) for c in row))  # user text: Text, never markup (and measured for widths)
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_pick()

    def action_pick(self) -> None:
        row = self.query_one(DataTable).cursor_row
        self.dismiss(self.keys[row] if 0 <= row < len(self.keys) else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
