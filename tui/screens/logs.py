"""`l`: a job's full output, followed while it runs (`f` toggles follow)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Label

from ..fleet import Fleet
from ..services import Connections
from ..widgets.output_log import OutputLog

FULL_LOG_BYTES = 16 << 20  # beyond this, the start is skipped (and said so): `gpudeck logs` has it all


class LogScreen(Screen):
    CSS_PATH = "job.tcss"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="back"),
        Binding("f", "toggle_follow", "Follow", id="toggle_follow"),
    ]

    def __init__(self, fleet: Fleet, connections: Connections, job_id: str) -> None:
        super().__init__()
        self.fleet, self.connections, self.job_id = fleet, connections, job_id

    def compose(self) -> ComposeResult:
        job = self.fleet.jobs.get(self.job_id)
        node = next(iter(job.nodes.values()), None) if job else None
        yield Label(f"output of {job.name if job else self.job_id}" + (f" on {node.host}" if node else ""),
                    classes="screen-title")
        link = self.connections.links.get(node.host) if node else None
        yield OutputLog(link, self.job_id, node.node if node else "0", FULL_LOG_BYTES, id="full-log")
        yield Footer()

    def action_toggle_follow(self) -> None:
        on = self.query_one(OutputLog).toggle_follow()
        self.notify("following the output" if on else "follow off: scroll freely")
