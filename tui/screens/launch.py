"""The new-job form (`n`): host, command (shown as the argv it will launch), name, workdir or the
code to sync, an image to run in, a Slurm host's allocation (partition, nodes, GPUs per node, time,
account, QOS), env and env files, setup, requirements, data, budget and idle stop
(enforced by the job's supervisor on the host). It checks the fields into the same LaunchOptions
`gpudeck run` makes; what needs this machine's files (a workdir, a directory to sync, env files) is
checked in a worker, so nothing typed is lost to a mistake; the launch itself is the caller's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from remote_agent.names import new_job_id

from ..actions.form_files import Checked, local_checks
from ..actions.options import LaunchOptions, form_options, preview_name, split_command
from ..actions.slurm_form import FIELDS as SLURM_FIELDS
from ..actions.slurm_form import LABELS as SLURM_LABELS
from ..actions.slurm_form import SlurmForm, slurm_options
from ..errors import GpudeckError
from ..services.background import background


@dataclass
class LaunchRequest:
    options: LaunchOptions
    job_id: str  # chosen here, so the jobs table can select the job when it appears


class LaunchScreen(ModalScreen[LaunchRequest | None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="launch_cancel"),
        Binding("ctrl+s", "launch", "Launch", id="launch_submit"),
    ]

    def __init__(
        self,
        hosts: list[str],
        command: str = "",
        workdir: str | None = None,
        slurm: dict[str, SlurmForm] | None = None,
    ) -> None:
        super().__init__(classes="modal")
        self.hosts, self.command = hosts, command
        self.slurm = slurm or {}  # the Slurm hosts among them: their fields are shown for those
        self.default_workdir = workdir or os.getcwd()
        self._pending: LaunchOptions | None = None  # checked options waiting for the workdir check

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog form"):
            yield Label("New job", classes="dialog-title")
            yield Label("host")
            yield Select(
                [(h, h) for h in self.hosts], value=self.hosts[0], allow_blank=False, id="host", compact=True
            )
            with Vertical(id="slurm-fields"):  # shown for a Slurm host (tui/actions/slurm_form.py)
                for field in SLURM_FIELDS:
                    yield Label(SLURM_LABELS[field])
                    yield Input(id=f"slurm_{field}", compact=True)
            yield Label("command (split like a shell would, run without one)")
            yield Input(self.command, placeholder="python train.py --lr 3e-4", id="command", compact=True)
            yield Static("", id="argv", classes="argv")
            yield Label("name")
            yield Input(placeholder="from the command", id="name", compact=True)
            yield Label("workdir")
            yield Input(placeholder=self.default_workdir, id="workdir", compact=True)
            yield Label("sync (a directory here: the job runs in its exact snapshot on the host)")
            yield Input(placeholder="none, e.g. . (the host's `sync` if set)", id="sync", compact=True)
            yield Label("image (run the command in a container of it; empty: the host's `image`, else none)")
            yield Input(placeholder="e.g. nvcr.io/nvidia/pytorch:24.05-py3", id="image", compact=True)
            yield Label("gpus (N or N:MODEL free GPUs the host gives the job; empty: every GPU)")
            yield Input(placeholder="all, e.g. 1 or 2:A100", id="gpus", compact=True)
            yield Label('env (K=V K2="with spaces" K3 — a bare K takes your value)')
            yield Input(placeholder="CUDA_VISIBLE_DEVICES=0", id="env", compact=True)
            yield Label("env files (dotenv files here, space-separated; values stay secret)")
            yield Input(placeholder="none, e.g. .env", id="env_files", compact=True)
            yield Label("setup (one shell line per line, run before the command)")
            yield TextArea("", id="setup", classes="setup", compact=True)
            yield Label("requirements (a file, auto or off: a Python environment cached on the host)")
            yield Input(
                placeholder="the host's default, e.g. requirements.txt", id="requirements", compact=True
            )
            yield Label("data (s3://BUCKET/PREFIX:PATH, space-separated: fetched on the host first)")
            yield Input(placeholder="none", id="data", compact=True)
            yield Label("budget (stop gracefully at this cost, warn at 80 %; needs the host's price)")
            yield Input(placeholder="none, e.g. 50", id="budget", compact=True)
            yield Label("idle stop (GPUs under X % for N min, not in the first M min: 30m@10%+15m; off)")
            yield Input(placeholder="the host's default", id="idle_stop", compact=True)
            yield Static("", id="error", classes="form-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Launch (ctrl+s)", variant="primary", id="launch")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#command", Input).focus()
        self._preview(self.command)
        self._show_slurm(self.hosts[0])

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "host":
            self._show_slurm(str(event.value))

    def _show_slurm(self, host: str) -> None:
        form = self.slurm.get(host)
        self.query_one("#slurm-fields").display = form is not None
        if form is not None:
            for field in SLURM_FIELDS:
                self.query_one(f"#slurm_{field}", Input).placeholder = form.placeholder(field)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "command":
            self._preview(event.value)

    def _preview(self, command: str) -> None:
        try:
            argv = split_command(command)
            text = "argv: " + repr(argv) if argv else "argv: (empty)"
        except GpudeckError as exc:
            text = str(exc)
        self.query_one("#argv", Static).update(Content(text))  # user text: never markup
        self.query_one("#name", Input).placeholder = preview_name(command) or "from the command"

    def _error(self, text: str) -> None:
        self.query_one("#error", Static).update(Content(text))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_launch()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "launch":
            self.action_launch()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_launch(self) -> None:
        host = str(self.query_one("#host", Select).value)
        field = {
            i: self.query_one(f"#{i}", Input).value
            for i in (
                "command",
                "name",
                "workdir",
                "env",
                "env_files",
                "budget",
                "idle_stop",
                "sync",
                "requirements",
                "data",
                "image",
                "gpus",
            )
        }
        try:
            options = form_options(
                host,
                field["command"],
                field["name"],
                field["workdir"],
                field["env"],
                self.query_one("#setup", TextArea).text,
                budget=field["budget"],
                idle_stop=field["idle_stop"],
                sync=field["sync"],
                requirements=field["requirements"],
                data=field["data"],
                image=field["image"],
                gpus=field["gpus"],
            )
            form = self.slurm.get(host)
            if form is not None:
                asked = {f: self.query_one(f"#slurm_{f}", Input).value for f in SLURM_FIELDS}
                options = slurm_options(options, asked, form)
        except GpudeckError as exc:
            self._error(str(exc))
            return
        except Exception as exc:  # a bug must not take the app down: say it in the form
            self._error(f"cannot build the job: {type(exc).__name__}: {exc}")
            return
        self._pending = options
        background(self).run(
            self,
            partial(local_checks, options, field["env_files"]),
            group="form-files",
            exclusive=True,
            done=self._checked,
            failed=lambda error: self._checked(Checked(None, str(error), "command")),
        )

    def _checked(self, checked: Checked) -> None:
        if self._pending is None:
            return
        self._pending = None
        if checked.options is None:
            self._error(checked.problem or "cannot launch")
            self.query_one(f"#{checked.field}").focus()
            return
        self.dismiss(LaunchRequest(checked.options, new_job_id()))
