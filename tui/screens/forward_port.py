"""The `F` dialog: which port of the job's node to forward here (PORT, or PORT:LOCAL; LOCAL 0 or
left out: any free port), or `x` to close the job's forwards."""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label

_PORTS = re.compile(r"([0-9]{1,5})(?::([0-9]{1,5}))?")
CLOSE = "x"


def parse_ports(text: str) -> tuple[int, int] | None:
    """(remote, local) for PORT[:LOCAL] (local 0: any free), or None when it is no such thing."""
    m = _PORTS.fullmatch(text.strip())
    if m is None:
        return None
    remote, local = int(m.group(1)), int(m.group(2) or 0)
    return (remote, local) if 1 <= remote <= 65535 and local <= 65535 else None


class ForwardPortScreen(ModalScreen[str | None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="forward_port_cancel")]

    def __init__(self, title: str, open_urls: list[str]) -> None:
        super().__init__(classes="modal")
        self.title_text, self.open_urls = title, open_urls

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Content(self.title_text), classes="dialog-title")  # holds a job name
            detail = "PORT or PORT:LOCAL (TensorBoard 6006, Jupyter 8888…); enter forwards, esc cancels."
            if self.open_urls:
                detail += f" Open: {', '.join(self.open_urls)}; `{CLOSE}` closes them."
            yield Label(Content(detail), classes="dialog-detail")
            yield Input(placeholder="6006", id="port")
            yield Label("", id="port-error", classes="dialog-detail")

    def on_mount(self) -> None:
        self.query_one("#port", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text == CLOSE or parse_ports(text) is not None:
            self.dismiss(text)
        else:
            self.query_one("#port-error", Label).update(
                Content(f"{text!r}: expected PORT or PORT:LOCAL (1-65535), or {CLOSE}")
            )

    def action_cancel(self) -> None:
        self.dismiss(None)
