"""`D`: the stacks of a hung job (issue 34) — the latest dump saved on each node (the agents' `dump`
op with `show`), scrollable; `n` takes a new one on every node (py-spy, or the faulthandler route)
and shows it. The agents are asked in a worker (tui/actions/dump.py), never on the event loop."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from ..actions.dump import NodeDump, dump_nodes
from ..fleet import Fleet
from ..printable import printable
from ..services import Connections
from ..services.background import background
from ..services.jobs import refused_read_only


def dump_text(dumps: list[NodeDump]) -> Text:
    """Every node's dump, one after the other; a node without one says why. Text (user text is
    never markup), each line printable (a command line or a stack may hold an ESC)."""
    out = Text()
    for d in dumps:
        if d.error is not None:
            out.append(printable(f"{d.host} node {d.node}: {d.error}") + "\n\n", style="bold")
            continue
        for line in d.text.rstrip("\n").split("\n"):
            out.append(printable(line) + "\n", style="bold" if line.startswith("===") else "")
        out.append("\n")
    return out


class DumpScreen(ModalScreen[None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [
        Binding("escape,D", "close", "Close", id="dump_close"),
        Binding("n", "take_dump", "New dump", id="dump_take", tooltip="take the stacks again, on every node"),
    ]

    def __init__(self, fleet: Fleet, connections: Connections, job_id: str) -> None:
        super().__init__(classes="modal")
        self.fleet, self.connections, self.job_id = fleet, connections, job_id
        self.dumps: list[NodeDump] | None = None  # the latest answer

    def compose(self) -> ComposeResult:
        job = self.fleet.jobs.get(self.job_id)
        with Vertical(classes="dialog procs-dialog"):
            yield Label(
                Content(f"Stacks of {job.name or job.id if job else self.job_id}"), classes="dialog-title"
            )
            with VerticalScroll(classes="dump-scroll"):
                yield Static(id="dump-text")
            yield Label(Content("reading the saved dump…"), classes="dialog-detail", id="dump-status")

    def on_mount(self) -> None:
        self._ask(show=True)

    def _ask(self, show: bool) -> None:
        job = self.fleet.jobs.get(self.job_id)
        if job is None:
            self._status("this job is gone")
            return
        nodes = [(n.host, n.node) for n in sorted(job.nodes.values(), key=lambda n: (len(n.node), n.node))]
        self._status("reading the saved dump…" if show else "taking the stacks on every node…")
        background(self).run(
            self,
            lambda: dump_nodes(self.connections, nodes, self.job_id, show=show),
            group="dump",
            exclusive=True,
            done=self.show,
            failed=lambda error: self._status(f"could not ask the agents: {error}"),
        )

    def show(self, dumps: list[NodeDump]) -> None:
        self.dumps = dumps
        self.query_one("#dump-text", Static).update(dump_text(dumps))
        taken = sum(d.error is None for d in dumps)
        said = f"{taken} of {len(dumps)} node{'s' * (len(dumps) != 1)} with a dump"
        self._status(f"{said} · n take a new one · esc close")

    def _status(self, line: str) -> None:
        self.query_one("#dump-status", Label).update(Content(line))  # remote errors are not markup

    def action_take_dump(self) -> None:
        if not refused_read_only(self.app, "taking a dump"):
            self._ask(show=False)

    def action_close(self) -> None:
        self.dismiss(None)
