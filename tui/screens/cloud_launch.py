"""The launch form of the Cloud tab (`l`): provider, instance type, spot, name, image, key pair and
subnet (vSwitch on Aliyun). It only checks the fields (no IO); the service launches in a worker,
and the new instance's host key is confirmed in the host-key modal unless the provider published it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from ..hosts_file import NAME_RE
from ..services.cloud import CloudLaunchRequest

EXAMPLE_TYPE = {"aws": "g5.xlarge", "aliyun": "ecs.gn7i-c8g1.2xlarge"}


class CloudLaunchScreen(ModalScreen[CloudLaunchRequest | None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="cloud_launch_cancel"),
        Binding("ctrl+s", "submit", "Launch", id="cloud_launch_submit"),
    ]

    def __init__(self, providers: list[str], taken: set[str] | None = None) -> None:
        super().__init__(classes="modal")
        self.providers = providers or ["aws", "aliyun"]
        self.taken = taken or set()  # host names already in use

    def compose(self) -> ComposeResult:
        first = self.providers[0]
        with VerticalScroll(classes="dialog form"):
            yield Label(
                "Launch a GPU instance (it becomes a gpudeck host once SSH answers)", classes="dialog-title"
            )
            yield Label("provider")
            yield Select(
                [(p, p) for p in self.providers], value=first, allow_blank=False, id="provider", compact=True
            )
            yield Label("instance type")
            yield Input(placeholder=EXAMPLE_TYPE.get(first, ""), id="type", compact=True)
            yield Checkbox("spot (cheaper; the provider may take it back)", id="spot", compact=True)
            yield Label("name (instance and host; default: the instance id)")
            yield Input(placeholder="gpu1", id="name", compact=True)
            yield Label("image (an AMI id, e.g. a Deep Learning AMI; an Aliyun image id)")
            yield Input(id="image", compact=True)
            yield Label("key pair")
            yield Input(id="key", compact=True)
            yield Label("subnet (AWS) / vSwitch (Aliyun)")
            yield Input(id="subnet", compact=True)
            yield Label("ssh user and port")
            with Horizontal(classes="form-row"):
                yield Input(placeholder="ubuntu on AWS, root on Aliyun", id="ssh_user", compact=True)
                yield Input("22", id="ssh_port", type="integer", compact=True)
            yield Static("", id="error", classes="form-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Launch (ctrl+s)", variant="warning", id="submit")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#type", Input).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        self.query_one("#type", Input).placeholder = EXAMPLE_TYPE.get(str(event.value), "")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "submit":
            self.action_submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _field(self, name: str) -> str | None:
        return self.query_one(f"#{name}", Input).value.strip() or None

    def action_submit(self) -> None:
        instance_type, name, port = self._field("type"), self._field("name"), self._field("ssh_port") or "22"
        problem = None
        if not port.isdigit() or not 0 < int(port) < 65536:
            problem = f"ssh port {port!r}: expected 1-65535"
        elif not instance_type:
            problem = (
                "instance type: required (e.g. "
                + EXAMPLE_TYPE.get(str(self.query_one(Select).value), "g5.xlarge")
                + ")"
            )
        elif not self._field("image"):
            problem = "image: required (an AMI id on AWS, an image id on Aliyun)"
        elif name and not NAME_RE.match(name):
            problem = f"name {name!r}: use 1-64 of A-Z a-z 0-9 . _ -"
        elif name and name in self.taken:
            problem = f"name {name!r}: a host has it already"
        if problem:
            self.query_one("#error", Static).update(Content(problem))  # user text: never markup
            return
        self.dismiss(
            CloudLaunchRequest(
                str(self.query_one("#provider", Select).value),
                str(instance_type),
                self.query_one("#spot", Checkbox).value,
                name,
                self._field("image"),
                self._field("key"),
                self._field("subnet"),
                self._field("ssh_user"),
                int(port),
            )
        )
