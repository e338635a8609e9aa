"""The header line that sums the fleet: hosts up, GPUs busy/total, running jobs, burn."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from ..fleet import Fleet


class FleetSummaryBar(Static):
    DEFAULT_CSS = """
    FleetSummaryBar { height: 1; padding: 0 1; }
    """

    def show(self, fleet: Fleet) -> None:
        s = fleet.summary()
        hosts_style = "$success" if s.hosts_up == s.hosts_total and s.hosts_total else "$warning"
        self.update(Content.assemble(
            ("gpudeck", "bold $accent"), "   hosts ", (f"{s.hosts_up}/{s.hosts_total} up", hosts_style),
            "   GPUs ", (f"{s.gpus_busy}/{s.gpus_total} busy", "$gpu-busy" if s.gpus_busy else ""),
            f"   jobs {s.jobs_running} running / {s.jobs_total}",
            "   burn ", ("— $/h", "$cost"),  # priced by the cost issue; until then, unknown
        ))
