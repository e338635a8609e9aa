"""An SSH host key the user must judge: an unknown key can be accepted or rejected; a changed
key cannot be accepted from here (as OpenSSH refuses it), only explained."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from ..remote import hostkey_errors


class HostKeyScreen(ModalScreen[bool]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [Binding("escape", "reject", "Reject", id="hostkey_reject")]

    def __init__(self, host: str, key_type: str, fingerprint: str, changed: bool = False) -> None:
        super().__init__(classes="modal")
        self.host, self.key_type, self.fingerprint, self.changed = host, key_type, fingerprint, changed

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog" + (" -danger" if self.changed else "")):
            if self.changed:
                yield Label(
                    Content(f"WARNING: the host key of {self.host} has CHANGED"), classes="dialog-title"
                )
                yield Label(
                    "Someone may be intercepting the connection, or the host was reinstalled. "
                    "gpudeck will not connect. If the change is expected, remove the old key "
                    "from known_hosts and connect again.",
                    classes="dialog-detail",
                )
            else:
                yield Label(Content(f"Unknown host key for {self.host}"), classes="dialog-title")
                yield Label(
                    "Check the fingerprint with the host's owner before accepting.", classes="dialog-detail"
                )
            yield Label(
                Content(f"{self.key_type} SHA256:{self.fingerprint.removeprefix('SHA256:')}"),
                classes="fingerprint",
            )
            with Horizontal(classes="dialog-buttons"):
                if not self.changed:
                    yield Button("Accept and remember", variant="warning", id="accept")
                yield Button("Reject" if not self.changed else "Close", id="reject")

    def on_mount(self) -> None:
        self.query_one("#reject", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "accept" and not self.changed)

    def action_reject(self) -> None:
        self.dismiss(False)


KEY_ANSWER_TIMEOUT = 600.0  # nobody answered: refuse (the connect retries later and asks again)


def confirm_key(app: App[Any], name: str, key: Any) -> bool:
    """SSH's confirm for an unknown key (a paramiko PKey), asked on `app`; runs on a connect
    worker's thread."""
    return ask_host_key(app, name, key.get_name(), hostkey_errors.fingerprint(key))


def ask_host_key(app: App[Any], name: str, key_type: str, fingerprint: str) -> bool:
    """Called on a connect worker's thread (SSH's `confirm`): shows the modal on the app thread
    and blocks this thread, not the app, until the user answers."""
    answer: Future[bool] = Future()

    def show() -> None:
        app.push_screen(HostKeyScreen(name, key_type, fingerprint), lambda ok: answer.set_result(bool(ok)))

    app.call_from_thread(show)
    try:
        return answer.result(timeout=KEY_ANSWER_TIMEOUT)
    except TimeoutError:
        return False
